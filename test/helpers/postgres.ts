/**
 * A throw-away PostgreSQL server for tests: initdb in a fresh temporary directory as the `postgres`
 * user (runuser; the tests run as root), started with pg_ctl on a free 127.0.0.1 port with its socket
 * in the same directory, password authentication over TCP, and removed (immediate stop, directory
 * deleted) by `stop()`, the cleanup registry, or process exit. Needs Debian's postgresql package.
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { PostgresConnection } from '../../relay/ops/config/postgres-connection.js';
import { registerCleanup } from './cleanup.js';
import { freePort } from './tinyproxy.js';

const run = promisify(execFile);
const PG_ROOT = '/usr/lib/postgresql';

export interface ThrowawayPostgres {
  readonly host: string;
  readonly port: number;
  /** The superuser's name and password (TCP logins need the password). */
  readonly user: string;
  readonly password: string;
  /** The temporary directory: data dir, socket, log. */
  readonly dir: string;
  /** The CA of the server certificate (with `tls`), else null. */
  readonly caPem: string | null;
  /** Creates an empty database and returns the connection to it (password set, no TLS). */
  createDatabase(name: string): Promise<PostgresConnection>;
  /** The server log so far. */
  log(): string;
  /** Stops the server at once (connections cut), keeping its data; `resume()` starts it again on the same port. */
  halt(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The bin directory of the newest installed PostgreSQL major version. */
export function postgresBinDir(): string {
  const versions = existsSync(PG_ROOT)
    ? readdirSync(PG_ROOT)
        .filter((v) => existsSync(join(PG_ROOT, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      `no PostgreSQL server under ${PG_ROOT}: apt-get install postgresql (the store tests need it)`,
    );
  }
  return join(PG_ROOT, versions[0]!, 'bin');
}

function asPostgres(bin: string, args: readonly string[]): Promise<unknown> {
  return run('runuser', ['-u', 'postgres', '--', bin, ...args], { timeout: 60_000 });
}

function stopSync(binDir: string, data: string, dir: string): void {
  try {
    execFileSync(
      'runuser',
      ['-u', 'postgres', '--', join(binDir, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop'],
      {
        stdio: 'ignore',
        timeout: 20_000,
      },
    );
  } catch {
    // not running
  }
  rmSync(dir, { recursive: true, force: true });
}

async function initCluster(binDir: string, dir: string, password: string): Promise<string> {
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  const { uid, gid } = postgresIds();
  chownSync(dir, uid, gid);
  chownSync(pwfile, uid, gid);
  await asPostgres(join(binDir, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    `--pwfile=${pwfile}`,
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  rmSync(pwfile);
  return data;
}

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

export interface ThrowawayOptions {
  /** Serve TLS with a certificate for 127.0.0.1 and localhost from a fresh test CA (`caPem`). */
  tls?: boolean;
}

function openssl(args: readonly string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe', timeout: 30_000 });
}

/**
 * A test CA and a server certificate it signs (127.0.0.1, localhost); the key is readable by postgres only.
 */
function makeServerCertificate(dir: string): { settings: Record<string, string>; caPem: string } {
  const f = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=relay test CA',
  ]);
  openssl(['req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl([
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.pem'),
    '-days',
    '2',
    '-extfile',
    f('server.ext'),
  ]);
  const { uid, gid } = postgresIds();
  chownSync(f('server.key'), uid, gid);
  chmodSync(f('server.key'), 0o600);
  chownSync(f('server.pem'), uid, gid);
  return {
    // Also on 127.0.0.2, an address the certificate does not name (name-check tests).
    settings: {
      ssl: 'on',
      ssl_cert_file: f('server.pem'),
      ssl_key_file: f('server.key'),
      listen_addresses: "'127.0.0.1,127.0.0.2'",
    },
    caPem: readFileSync(f('ca.pem'), 'utf8'),
  };
}

export async function startThrowawayPostgres(opts: ThrowawayOptions = {}): Promise<ThrowawayPostgres> {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'the PostgreSQL store tests start their server as the postgres user (runuser): run them as root',
    );
  }
  const binDir = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'relay-pg-'));
  chmodSync(dir, 0o700);
  const password = `pw-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  let data = join(dir, 'data');
  const unregister = registerCleanup({
    label: `postgres in ${dir}`,
    async: async () => stopSync(binDir, data, dir),
    sync: () => stopSync(binDir, data, dir),
  });
  data = await initCluster(binDir, dir, password);
  const port = await freePort();
  const tls = opts.tls ? makeServerCertificate(dir) : null;
  const settings = { listen_addresses: '127.0.0.1', fsync: 'off', max_connections: '200', ...tls?.settings };
  const flags = [`-p ${port}`, `-k ${dir}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)];
  const logFile = join(dir, 'server.log');
  const pgCtl = join(binDir, 'pg_ctl');
  const start = () =>
    asPostgres(pgCtl, ['-D', data, '-l', logFile, '-w', '-t', '30', '-o', flags.join(' '), 'start']);
  await start();
  const host = '127.0.0.1';
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ host, port, user: 'postgres', password, database: 'postgres' });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    host,
    port,
    user: 'postgres',
    password,
    dir,
    caPem: tls?.caPem ?? null,
    async createDatabase(name: string): Promise<PostgresConnection> {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`bad database name ${name}`);
      await admin(`CREATE DATABASE ${name}`);
      return { target: { host, port, database: name, user: 'postgres', sslmode: null }, password, ca: null };
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async halt(): Promise<void> {
      await asPostgres(pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    resume: async () => {
      await start();
    },
    async stop(): Promise<void> {
      unregister();
      stopSync(binDir, data, dir);
    },
  };
}
