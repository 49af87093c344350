/**
 * The `--store postgres://USER@HOST:PORT/DB?sslmode=MODE` URL of the PostgreSQL store. The password is
 * never part of it (URLs end up in shell history, process lists and config dumps): it comes from
 * `--store-password-file` or TUNNEL_RELAY_STORE_PASSWORD. `sslmode` is one of disable, require,
 * verify-ca, verify-full (libpq's meanings); any other query parameter is refused, so a typo cannot
 * silently weaken TLS.
 */

export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

export interface PostgresTarget {
  host: string;
  port: number;
  database: string;
  user: string;
  /** null: disable without --store-ca-file, verify-full with one. */
  sslmode: SslMode | null;
}

export type ParsedPostgresUrl = { ok: true; target: PostgresTarget } | { ok: false; reason: string };

function decode(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

function isSslMode(value: string): value is SslMode {
  return (SSL_MODES as readonly string[]).includes(value);
}

/** Parses the store URL; reasons never repeat a password. */
export function parsePostgresUrl(value: string): ParsedPostgresUrl {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return { ok: false, reason: 'not a URL; expected postgres://USER@HOST[:PORT]/DATABASE' };
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return { ok: false, reason: 'expected postgres://USER@HOST[:PORT]/DATABASE' };
  }
  if (u.password !== '') {
    return {
      ok: false,
      reason: 'the URL must not carry the password; use --store-password-file or TUNNEL_RELAY_STORE_PASSWORD',
    };
  }
  const host = decode(u.hostname);
  const user = decode(u.username);
  const database = decode(u.pathname.replace(/^\//, ''));
  if (!host) return { ok: false, reason: 'the URL names no host' };
  if (!user) return { ok: false, reason: 'the URL names no user (postgres://USER@HOST/DATABASE)' };
  if (!database || database.includes('/'))
    return { ok: false, reason: 'the URL names no database (one path segment)' };
  if (u.hash !== '') return { ok: false, reason: 'the URL must not carry a fragment' };
  let sslmode: SslMode | null = null;
  for (const [name, v] of u.searchParams) {
    if (name !== 'sslmode')
      return { ok: false, reason: `unknown URL parameter ${JSON.stringify(name)}; only sslmode` };
    if (!isSslMode(v))
      return {
        ok: false,
        reason: `sslmode must be one of ${SSL_MODES.join(', ')}, got ${JSON.stringify(v)}`,
      };
    sslmode = v;
  }
  const port = u.port === '' ? 5432 : Number(u.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return { ok: false, reason: 'the port must be 1-65535' };
  return { ok: true, target: { host, port, database, user, sslmode } };
}

/** postgres://USER@HOST:PORT/DB: how errors and logs name the server (never with a password). */
export function describeTarget(t: Pick<PostgresTarget, 'host' | 'port' | 'database' | 'user'>): string {
  const host = t.host.includes(':') && !t.host.startsWith('/') ? `[${t.host}]` : t.host;
  return `postgres://${encodeURIComponent(t.user)}@${host}:${t.port}/${encodeURIComponent(t.database)}`;
}
