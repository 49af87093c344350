/**
 * The client's address across a mesh hop. A replica that forwards a request (a relay-mode replica, or a hub replica
 * forwarding one hop to the replica holding the agent) sets `tunnel-mesh-source` to the address of the client it
 * took the request from, beside the mesh key. The receiving replica counts and logs the request under that address
 * only when the mesh key checks out (mesh-auth.ts): from anyone else the header is not believed and the
 * connection's own peer address is used, so an internet client cannot name another source to dodge a per-source
 * limit or write another address into the audit log.
 *
 * `tunnel-mesh-via: relay` marks a request a relay-mode replica forwarded: the hub replica that receives it may
 * still send it one hop to the replica holding the agent (the relay tier routes by locations up to a second old).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { MeshKey } from '../../ops/config/mesh-settings.js';
import { peerAddress } from '../../ops/http/source-address.js';
import { MESH_KEY_HEADER, MESH_VIA_HEADER, meshHeaderValue, type VIA_RELAY } from './mesh-auth.js';

export const MESH_SOURCE_HEADER = 'tunnel-mesh-source';
/** Longest address text accepted (an IPv6 address with an embedded IPv4 one is 45). */
const MAX_SOURCE_CHARS = 45;

/** The address a forwarder named, or null when the value is not one IP address (no zone, no port). */
export function parseMeshSource(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > MAX_SOURCE_CHARS) return null;
  return isIP(value) !== 0 && !value.includes('%') ? value : null;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'latin1').digest();

/** True when the request carries this fleet's mesh key (constant time; false without a key). */
export function carriesMeshKey(key: MeshKey | null, headers: IncomingHttpHeaders): boolean {
  const given = headers[MESH_KEY_HEADER];
  if (key === null || typeof given !== 'string') return false;
  return timingSafeEqual(digest(given), digest(meshHeaderValue(key)));
}

/**
 * The address a request is counted and logged under: the forwarder's MESH_SOURCE_HEADER on a request with the
 * fleet's mesh key, else the peer address of the connection it came on (undefined once that socket is gone).
 */
export function requestSource(key: MeshKey | null, req: IncomingMessage): string | undefined {
  const named = parseMeshSource(req.headers[MESH_SOURCE_HEADER]);
  if (named !== null && carriesMeshKey(key, req.headers)) return named;
  return peerAddress(req.socket);
}

/** The mesh headers a forwarder adds: the key, the client's address, and for a relay-mode replica the via mark. */
export function meshHeaders(
  key: MeshKey,
  source: string | undefined,
  via: typeof VIA_RELAY | null,
): string[] {
  return [
    MESH_KEY_HEADER,
    meshHeaderValue(key),
    ...(source !== undefined ? [MESH_SOURCE_HEADER, source] : []),
    ...(via !== null ? [MESH_VIA_HEADER, via] : []),
  ];
}
