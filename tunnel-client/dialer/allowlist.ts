/**
 * The agent's allowlist: the targets a hub stream may name. The `--upstream` URL's host:port (the
 * default upstream) plus each `--allow HOST:PORT`. Hosts compare case-insensitively; IPv6 literals are
 * written in brackets (`[::1]:6443`).
 *
 * Targets a stream may name (the OPEN text, docs/PROTOCOL.md):
 *   `@upstream`   the default upstream, spoken to as its URL says (TLS when https); `@upstream?user=..`
 *                 also names the caller to impersonate there (shared/net/mux/upstream-identity.ts)
 *   `@port:N`     CONNECT <cluster>.clusters.local:N: the upstream when N is its port, else 127.0.0.1:N
 *   `HOST:PORT`   that address, as plain TCP
 */
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { type CallerIdentity, parseUpstreamTarget } from '../../shared/net/mux/upstream-identity.js';

export { UPSTREAM_TARGET as TARGET_UPSTREAM } from '../../shared/net/mux/upstream-identity.js';
export const TARGET_PORT_PREFIX = '@port:';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface Upstream extends HostPort {
  readonly url: string;
  readonly tls: boolean;
}

export type ResolvedTarget =
  | {
      readonly kind: 'dial';
      readonly addr: HostPort;
      readonly tls: boolean;
      /** `@upstream` streams only: the caller to impersonate (null: the agent's own identity). */
      readonly identity?: CallerIdentity | null;
    }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'bad'; readonly reason: string };

/** `host:port` / `[v6]:port` -> parts; null when malformed. Hosts are lower-cased. */
export function parseHostPort(text: string): HostPort | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65_535) return null;
  const host = (m[1] ?? m[2] ?? '').toLowerCase();
  if (host.length === 0 || host.length > 253) return null;
  return { host, port };
}

export function formatHostPort(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** The upstream URL's parts; BAD_CONFIG for anything but http(s)://host[:port][/...]. */
export function parseUpstream(url: string): Upstream {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TunnelError('BAD_CONFIG', `upstream: '${url}' is not a URL (want https://HOST:PORT)`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') {
    throw new TunnelError('BAD_CONFIG', `upstream: scheme '${u.protocol}' is not http or https`);
  }
  const tls = u.protocol === 'https:';
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = u.port === '' ? (tls ? 443 : 80) : Number(u.port);
  return { url, host, port, tls };
}

export class Allowlist {
  readonly upstream: Upstream | null;
  readonly #allowed = new Set<string>();

  constructor(upstream: string | null, allow: readonly string[]) {
    this.upstream = upstream ? parseUpstream(upstream) : null;
    if (this.upstream) this.#allowed.add(formatHostPort(this.upstream));
    for (const a of allow) {
      const hp = parseHostPort(a);
      if (!hp) throw new TunnelError('BAD_CONFIG', `allow: '${a}' is not HOST:PORT`);
      this.#allowed.add(formatHostPort(hp));
    }
  }

  /** Every allowed HOST:PORT (the upstream first). */
  get entries(): string[] {
    return [...this.#allowed];
  }

  allows(a: HostPort): boolean {
    return this.#allowed.has(formatHostPort(a));
  }

  /** What a stream's OPEN text asks for, checked against the list. */
  resolve(target: string): ResolvedTarget {
    const up = this.upstream;
    let identity: CallerIdentity | null | undefined;
    try {
      identity = parseUpstreamTarget(target);
    } catch (err) {
      if (!isTunnelError(err)) throw err;
      return { kind: 'bad', reason: err.message };
    }
    if (identity !== undefined) {
      if (!up) return { kind: 'refused', reason: 'this agent has no --upstream' };
      return { kind: 'dial', addr: up, tls: up.tls, identity };
    }
    if (target.startsWith(TARGET_PORT_PREFIX)) {
      const text = target.slice(TARGET_PORT_PREFIX.length);
      const port = /^\d{1,5}$/.test(text) ? Number(text) : 0;
      if (port < 1 || port > 65_535) return { kind: 'bad', reason: `bad port '${text}'` };
      const addr = up && up.port === port ? { host: up.host, port } : { host: '127.0.0.1', port };
      if (!this.allows(addr)) return { kind: 'refused', reason: `${formatHostPort(addr)} is not allowed` };
      return { kind: 'dial', addr, tls: false };
    }
    const addr = parseHostPort(target);
    if (!addr) return { kind: 'bad', reason: 'target is not HOST:PORT' };
    if (!this.allows(addr)) return { kind: 'refused', reason: `${formatHostPort(addr)} is not allowed` };
    return { kind: 'dial', addr, tls: false };
  }
}
