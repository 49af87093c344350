/**
 * The store part of the relay configuration: `--store` (sqlite:PATH or postgres://USER@HOST/DB) and,
 * for PostgreSQL only, `--store-password-file` (else TUNNEL_RELAY_STORE_PASSWORD), `--store-ca-file`
 * and `--store-pool-size`. Files are read here, so a missing one fails the start with BAD_CONFIG
 * naming the flag. The password is held in a StorePassword, which prints and serializes as nothing.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { TunnelError } from '../../../shared/errors.js';
import { type PostgresTarget, parsePostgresUrl } from './postgres-url.js';

/** The environment variable that may hold the PostgreSQL password (after --store-password-file). */
export const STORE_PASSWORD_ENV = 'TUNNEL_RELAY_STORE_PASSWORD';
/** PostgreSQL connections a relay holds (`--store-pool-size`): the default and the most. */
export const DEFAULT_POOL_SIZE = 10;
export const MAX_POOL_SIZE = 100;

/** A password kept out of logs: JSON.stringify gives {}, util.inspect shows no value. */
export class StorePassword {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }
}

export interface PostgresStoreConfig {
  kind: 'postgres';
  target: PostgresTarget;
  password: StorePassword | null;
  /** PEM text of --store-ca-file; null: the system trust store. */
  ca: string | null;
  poolSize: number;
}

export type StoreConfig = { kind: 'sqlite'; path: string } | PostgresStoreConfig;

/** A setting's value and where it came from (`--flag`, an env name, or the config file). */
export type Sourced = [unknown, string] | undefined;

export interface StoreSettings {
  store: Sourced;
  passwordFile: Sourced;
  caFile: Sourced;
  poolSize: Sourced;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Used when --store is not given. */
  defaultSqlitePath: string;
}

function bad(key: string, source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `${key} (${source}): ${reason}`);
}

function readSmallFile(key: string, source: string, value: unknown, cwd: string): string {
  if (typeof value !== 'string' || value === '') bad(key, source, 'expected a file path');
  const path = isAbsolute(value) ? value : resolve(cwd, value);
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    bad(key, source, `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'read error'})`);
  }
}

function parsePoolSize(v: Sourced): number {
  if (!v) return DEFAULT_POOL_SIZE;
  const n =
    typeof v[0] === 'number' ? v[0] : typeof v[0] === 'string' && /^\d{1,4}$/.test(v[0]) ? Number(v[0]) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_POOL_SIZE) {
    bad('store-pool-size', v[1], `expected a whole number 1-${MAX_POOL_SIZE}, got ${JSON.stringify(v[0])}`);
  }
  return n;
}

function password(s: StoreSettings): StorePassword | null {
  if (s.passwordFile) {
    const text = readSmallFile('store-password-file', s.passwordFile[1], s.passwordFile[0], s.cwd);
    const value = text.replace(/\r?\n$/, '');
    if (value === '' || /[\r\n]/.test(value)) {
      bad('store-password-file', s.passwordFile[1], 'the file must hold the password on one line');
    }
    return new StorePassword(value);
  }
  const fromEnv = s.env[STORE_PASSWORD_ENV];
  return fromEnv !== undefined && fromEnv !== '' ? new StorePassword(fromEnv) : null;
}

function postgresStore(value: string, source: string, s: StoreSettings): PostgresStoreConfig {
  const parsed = parsePostgresUrl(value);
  // The reason never repeats the URL: it may carry a password the user should not see echoed into logs.
  if (!parsed.ok) bad('store', source, parsed.reason);
  let ca: string | null = null;
  if (s.caFile) {
    ca = readSmallFile('store-ca-file', s.caFile[1], s.caFile[0], s.cwd);
    if (!ca.includes('-----BEGIN CERTIFICATE-----'))
      bad('store-ca-file', s.caFile[1], 'expected PEM certificates');
  }
  return {
    kind: 'postgres',
    target: parsed.target,
    password: password(s),
    ca,
    poolSize: parsePoolSize(s.poolSize),
  };
}

export function parseStoreSettings(s: StoreSettings): StoreConfig {
  const v = s.store;
  if (!v || (typeof v[0] === 'string' && v[0].startsWith('sqlite:'))) {
    for (const [key, given] of [
      ['store-password-file', s.passwordFile],
      ['store-ca-file', s.caFile],
      ['store-pool-size', s.poolSize],
    ] as const) {
      if (given) bad(key, given[1], 'only applies to a postgres:// store');
    }
  }
  if (!v) return { kind: 'sqlite', path: s.defaultSqlitePath };
  const [value, source] = v;
  if (typeof value !== 'string' || value.length === 0) {
    bad('store', source, 'expected sqlite:PATH, sqlite::memory: or postgres://USER@HOST/DATABASE');
  }
  if (value.startsWith('sqlite:')) {
    const p = value.slice('sqlite:'.length);
    if (p.length === 0) bad('store', source, 'sqlite: needs a path, e.g. sqlite:relay.db');
    if (p === ':memory:') return { kind: 'sqlite', path: p };
    return { kind: 'sqlite', path: isAbsolute(p) ? p : resolve(s.cwd, p) };
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://'))
    return postgresStore(value, source, s);
  bad(
    'store',
    source,
    `unknown store ${JSON.stringify(value.split(':')[0])}; expected sqlite:PATH or postgres://...`,
  );
}
