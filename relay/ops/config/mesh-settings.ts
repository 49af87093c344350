/**
 * The mesh part of the relay configuration (relay/ops/config/config.ts reads the values, this file checks them):
 *   --hub-key-file   the fleet's hub WireGuard private key (base64 or hex, one line; 0600 like other keys)
 *   --mesh-key-file  the secret every replica of a fleet shares to authenticate mesh requests (>= 32 bytes)
 *   --mesh-url       https://HOST:PORT other replicas dial to reach this one (default: from a specific --listen host)
 *   --mesh-dead-after seconds without a heartbeat after which a replica counts as gone (default 5)
 * Files are read here, so a missing or unreadable one fails the start with BAD_CONFIG naming the flag. The mesh
 * key is held in a MeshKey, which prints and serializes as nothing.
 */

import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { inspect } from 'node:util';
import { TunnelError } from '../../../shared/errors.js';
import { type OnModeFixed, protectSecretFile } from '../../../shared/kit/secret-file.js';

/** Fewest bytes a mesh key may hold. */
export const MIN_MESH_KEY_BYTES = 32;
/** Most bytes read from a mesh key file. */
export const MAX_MESH_KEY_BYTES = 4096;
/** Range of --mesh-dead-after (seconds). */
export const MESH_DEAD_AFTER_RANGE = { min: 2, max: 300, default: 5 } as const;
/** Longest --mesh-url accepted. */
export const MAX_MESH_URL_LENGTH = 512;

/** The shared mesh secret: JSON.stringify gives "[redacted]", util.inspect shows no value. */
export class MeshKey {
  readonly #value: Buffer;

  constructor(value: Buffer) {
    this.#value = value;
  }

  reveal(): Buffer {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return 'MeshKey [redacted]';
  }
}

export interface MeshConfig {
  /** What other replicas dial to reach this one; null: the address the TLS port is bound to (a specific host). */
  url: string | null;
  /** Null: no mesh (a single relay, or a fleet whose replicas do not forward). */
  key: MeshKey | null;
  /** A replica whose heartbeat is older than this is gone: its agent locations are ignored. */
  deadAfterMs: number;
}

export type Sourced = [unknown, string] | undefined;

export interface MeshSettings {
  meshUrl: Sourced;
  meshKeyFile: Sourced;
  deadAfter: Sourced;
  listen: { host: string; port: number };
  plainHttp: boolean;
  postgres: boolean;
  cwd: string;
  onModeFixed?: OnModeFixed;
}

function bad(key: string, source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `${key} (${source}): ${reason}`);
}

export function filePath(value: unknown, key: string, source: string, cwd: string): string {
  if (typeof value !== 'string' || value === '') bad(key, source, 'expected a file path');
  return isAbsolute(value) ? value : resolve(cwd, value);
}

/** Parses --mesh-url: https://HOST:PORT with no path, credentials, query or fragment. */
export function parseMeshUrl(value: unknown, source: string): string {
  if (typeof value !== 'string' || value.length > MAX_MESH_URL_LENGTH) {
    bad('mesh-url', source, `expected an https://HOST:PORT URL of at most ${MAX_MESH_URL_LENGTH} characters`);
  }
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    bad('mesh-url', source, `not a URL: ${JSON.stringify(value)}`);
  }
  if (u.protocol !== 'https:')
    bad('mesh-url', source, `must start with https://, got ${JSON.stringify(value)}`);
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    bad(
      'mesh-url',
      source,
      `must be https://HOST:PORT only (no path, credentials, query or fragment), got ${JSON.stringify(value)}`,
    );
  }
  return u.origin;
}

/** Reads --mesh-key-file: at least MIN_MESH_KEY_BYTES bytes after trailing white space is removed. */
export function readMeshKey(path: string, source: string, onModeFixed?: OnModeFixed): MeshKey {
  protectSecretFile(path, 'mesh key', onModeFixed);
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (err) {
    bad(
      'mesh-key-file',
      source,
      `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'read error'})`,
    );
  }
  if (raw.length > MAX_MESH_KEY_BYTES) {
    bad(
      'mesh-key-file',
      source,
      `${path} holds more than ${MAX_MESH_KEY_BYTES} bytes; a mesh key is one line`,
    );
  }
  const text = raw.toString('latin1').replace(/\s+$/, '');
  if (text.length < MIN_MESH_KEY_BYTES) {
    bad(
      'mesh-key-file',
      source,
      `${path} holds ${text.length} bytes; a mesh key needs at least ${MIN_MESH_KEY_BYTES} (openssl rand -base64 48)`,
    );
  }
  return new MeshKey(Buffer.from(text, 'latin1'));
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::';

function parseDeadAfter(v: Sourced): number {
  if (!v) return MESH_DEAD_AFTER_RANGE.default * 1000;
  const [value, source] = v;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,4}$/.test(value)
        ? Number(value)
        : NaN;
  const { min, max } = MESH_DEAD_AFTER_RANGE;
  if (!Number.isInteger(n) || n < min || n > max) {
    bad('mesh-dead-after', source, `expected whole seconds ${min}-${max}, got ${JSON.stringify(value)}`);
  }
  return n * 1000;
}

/** The mesh settings, checked against each other and the rest of the configuration. */
export function parseMeshSettings(s: MeshSettings): MeshConfig {
  const deadAfterMs = parseDeadAfter(s.deadAfter);
  const given = s.meshKeyFile ?? s.meshUrl;
  if (!given) return { url: null, key: null, deadAfterMs };
  const flag = s.meshKeyFile ? 'mesh-key-file' : 'mesh-url';
  if (!s.postgres) bad(flag, given[1], 'the mesh joins replicas that share a postgres:// --store');
  if (s.plainHttp)
    bad(flag, given[1], "the mesh runs over the relay's own TLS; it cannot be used with plain-http");
  if (!s.meshKeyFile)
    bad('mesh-key-file', given[1], 'required with --mesh-url (the secret every replica shares)');
  const path = filePath(s.meshKeyFile[0], 'mesh-key-file', s.meshKeyFile[1], s.cwd);
  const key = readMeshKey(path, s.meshKeyFile[1], s.onModeFixed);
  const url = s.meshUrl ? parseMeshUrl(s.meshUrl[0], s.meshUrl[1]) : null;
  if (url === null && isWildcard(s.listen.host)) {
    bad(
      'mesh-url',
      s.meshKeyFile[1],
      `required when --listen is ${s.listen.host}:${s.listen.port}: give the address other replicas dial, e.g. https://$(POD_IP):8443`,
    );
  }
  return { url, key, deadAfterMs };
}
