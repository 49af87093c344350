/**
 * A throw-away PostgreSQL server for benchmarks (the tests have their own in test/helpers/postgres.ts, with
 * the cleanup registry): initdb in a fresh temporary directory as the `postgres` user (runuser; run as root),
 * pg_ctl on a free loopback port with the server's default durability (fsync and synchronous commit on, as in
 * production), password logins over TCP; `stop()` stops it at once and removes the directory. Needs Debian's
 * postgresql package.
 */
import { execFileSync } from 'node:child_process';
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
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const PG_ROOT = '/usr/lib/postgresql';

export interface BenchPostgres {
  /** postgres://postgres@127.0.0.1:PORT/relay (the password is `password`). */
  readonly url: string;
  readonly password: string;
  /** The postmaster's pid (its backends are its children). */
  readonly pid: number;
  stop(): void;
}

function binDir(): string {
  const versions = existsSync(PG_ROOT)
    ? readdirSync(PG_ROOT).filter((v) => existsSync(join(PG_ROOT, v, 'bin', 'initdb')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL under ${PG_ROOT}: apt-get install postgresql`);
  return join(PG_ROOT, newest, 'bin');
}

function asPostgres(bin: string, args: readonly string[]): void {
  execFileSync('runuser', ['-u', 'postgres', '--', bin, ...args], { stdio: 'pipe', timeout: 60_000 });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export async function startBenchPostgres(): Promise<BenchPostgres> {
  if (process.getuid?.() !== 0)
    throw new Error('the PostgreSQL benchmark starts its server with runuser: run it as root');
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  chmodSync(dir, 0o700);
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
  chownSync(dir, uid, gid);
  const password = `pw-${Date.now().toString(36)}`;
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  chownSync(pwfile, uid, gid);
  const data = join(dir, 'data');
  const stop = (): void => {
    try {
      asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    asPostgres(join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${pwfile}`,
      '-E',
      'UTF8',
    ]);
    const port = await freePort();
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`;
    asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', opts, 'start']);
    const admin = new pg.Client({
      host: '127.0.0.1',
      port,
      user: 'postgres',
      password,
      database: 'postgres',
    });
    await admin.connect();
    await admin.query('CREATE DATABASE relay');
    await admin.end();
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return { url: `postgres://postgres@127.0.0.1:${port}/relay`, password, pid, stop };
  } catch (err) {
    stop();
    throw err;
  }
}
