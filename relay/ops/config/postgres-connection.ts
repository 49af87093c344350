/**
 * How the PostgreSQL store reaches its server: the pg pool and client settings (bounded pool, connect
 * and statement timeouts, TLS from sslmode and the CA file, BIGINT columns as numbers) and the
 * BAD_CONFIG error for a server that cannot be reached, which names the server but never the password.
 */
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { TunnelError } from '../../../shared/errors.js';
import { describeTarget, type PostgresTarget, type SslMode } from './postgres-url.js';

/** Connecting (TCP, TLS, authentication) and waiting for a free pool connection give up after this. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** A statement (lock waits included) is cancelled by the server after this; the client gives up a bit later. */
export const STATEMENT_TIMEOUT_MS = 30_000;
const IDLE_TIMEOUT_MS = 30_000;

export interface PostgresConnection {
  target: PostgresTarget;
  /** From --store-password-file or TUNNEL_RELAY_STORE_PASSWORD; null: none (trust, peer or certificate). */
  password: string | null;
  /** PEM CA certificates from --store-ca-file; null: the system trust store. */
  ca: string | null;
}

/** The TLS settings of libpq's sslmode; no sslmode means verify-full with a CA file, disable without. */
export function tlsOptions(conn: PostgresConnection): false | ConnectionOptions {
  const mode: SslMode = conn.target.sslmode ?? (conn.ca !== null ? 'verify-full' : 'disable');
  const ca = conn.ca !== null ? { ca: conn.ca } : {};
  switch (mode) {
    case 'disable':
      return false;
    case 'require':
      // As in libpq, require with a CA file checks the chain (verify-ca).
      return conn.ca !== null
        ? { ...ca, rejectUnauthorized: true, checkServerIdentity: () => undefined }
        : { rejectUnauthorized: false };
    case 'verify-ca':
      return { ...ca, rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { ...ca, rejectUnauthorized: true };
  }
}

function int8Types(): pg.TypeOverrides {
  const types = new pg.TypeOverrides();
  // Times are milliseconds and counts are small: both fit a double exactly.
  types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
  return types;
}

export function clientConfig(conn: PostgresConnection, connectTimeoutMs: number): pg.ClientConfig {
  return {
    host: conn.target.host,
    port: conn.target.port,
    database: conn.target.database,
    user: conn.target.user,
    password: conn.password ?? undefined,
    ssl: tlsOptions(conn),
    connectionTimeoutMillis: connectTimeoutMs,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS + 5_000,
    application_name: 'tunnel-relay',
    types: int8Types(),
  };
}

export function poolConfig(
  conn: PostgresConnection,
  poolSize: number,
  connectTimeoutMs: number,
): pg.PoolConfig {
  return { ...clientConfig(conn, connectTimeoutMs), max: poolSize, idleTimeoutMillis: IDLE_TIMEOUT_MS };
}

/** A failure text with the password cut out, whatever the driver or server put in it. */
export function scrub(text: string, password: string | null): string {
  return password ? text.split(password).join('***') : text;
}

/** BAD_CONFIG for a server the relay cannot use at start: names host, port, database and user only. */
export function connectError(conn: PostgresConnection, err: unknown): TunnelError {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  const code = typeof e?.code === 'string' ? `${e.code}: ` : '';
  const reason = scrub(`${code}${message}`, conn.password).split('\n')[0];
  return new TunnelError('BAD_CONFIG', `store: cannot use ${describeTarget(conn.target)} (${reason})`);
}
