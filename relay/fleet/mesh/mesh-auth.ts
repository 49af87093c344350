/**
 * Mesh request authentication. A replica forwarding a hub request to another sends the fleet's mesh key
 * (--mesh-key-file, base64) in the `tunnel-mesh-key` header beside the caller's own credential. The receiving
 * replica:
 *   - a request without the header is a client's: served as usual (and may be forwarded one hop);
 *   - a request with the header and the right key is a mesh request: served locally, never forwarded again;
 *   - a request with the header and any other value, or on a relay with no mesh key, is refused with
 *     MESH_UNAUTHENTICATED before anything else is looked at, on every route (mesh-screen.ts: the API, /derp, the
 *     console, the probes; the hub proxies check it here through mesh-routing.ts).
 * The comparison is constant-time over SHA-256 digests (no length or prefix leaks); the key never reaches a log,
 * an error message or an agent (the path proxy drops the header).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { TunnelError } from '../../../shared/errors.js';
import type { MeshKey } from '../../ops/config/mesh-settings.js';

/** The header a forwarding replica sets (lower case, as Node gives header names). */
export const MESH_KEY_HEADER = 'tunnel-mesh-key';

/** Set by a relay-mode replica on what it forwards (mesh-source.ts): such a request may still go one hop. */
export const MESH_VIA_HEADER = 'tunnel-mesh-via';
export const VIA_RELAY = 'relay';

/** A client's request, a hub replica's mesh request (served here), or one a relay-mode replica forwarded. */
export type MeshOrigin = 'client' | 'mesh' | 'tier';

/** The header value a replica sends: the key's bytes, base64. */
export function meshHeaderValue(key: MeshKey): string {
  return key.reveal().toString('base64');
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'latin1').digest();

/** Counts of mesh header checks (exported on /metrics). */
export interface MeshAuthStats {
  accepted: number;
  refused: number;
}

/**
 * The refusal of a request whose mesh header is bad (any value but this fleet's key, or the header on a relay with
 * no mesh key), counted as refused; null for a request without the header or with the right key.
 */
export function meshRefusal(
  key: MeshKey | null,
  headers: IncomingHttpHeaders,
  stats?: MeshAuthStats,
): TunnelError | null {
  const given = headers[MESH_KEY_HEADER];
  if (given === undefined) return null;
  const ok =
    key !== null && typeof given === 'string' && timingSafeEqual(digest(given), digest(meshHeaderValue(key)));
  if (ok) return null;
  if (stats) stats.refused++;
  return new TunnelError(
    'MESH_UNAUTHENTICATED',
    key === null
      ? `this relay takes no mesh requests (it has no --mesh-key-file); remove the ${MESH_KEY_HEADER} header`
      : `the ${MESH_KEY_HEADER} header does not carry this fleet's mesh key; give every replica the same --mesh-key-file`,
  );
}

/** Whether the request is a client's or a mesh peer's; MESH_UNAUTHENTICATED for a bad mesh header. */
export function meshOrigin(
  key: MeshKey | null,
  headers: IncomingHttpHeaders,
  stats?: MeshAuthStats,
): MeshOrigin {
  const refused = meshRefusal(key, headers, stats);
  if (refused) throw refused;
  if (headers[MESH_KEY_HEADER] === undefined) return 'client';
  if (stats) stats.accepted++;
  return headers[MESH_VIA_HEADER] === VIA_RELAY ? 'tier' : 'mesh';
}
