import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { resolveRelayConfig } from './config.js';
import type { PostgresStoreConfig } from './config-store.js';

const dir = mkdtempSync(join(tmpdir(), 'relay-config-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function badConfig(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected BAD_CONFIG');
}

function pgStore(flags: Record<string, unknown>, env: Record<string, string> = {}): PostgresStoreConfig {
  const store = resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', ...flags }, env }).store;
  if (store.kind !== 'postgres') throw new Error('expected a postgres store');
  return store;
}

describe('--store postgres://', () => {
  it('gives host, port, database, user and sslmode; a bounded pool by default', () => {
    const s = pgStore({ store: 'postgres://relay@db.example:6432/tunnels?sslmode=verify-full' });
    expect(s.target).toEqual({
      host: 'db.example',
      port: 6432,
      database: 'tunnels',
      user: 'relay',
      sslmode: 'verify-full',
    });
    expect(s.poolSize).toBe(10);
    expect(s.password).toBeNull();
    expect(pgStore({ store: 'postgresql://u@h/db' }).target).toMatchObject({ port: 5432, sslmode: null });
  });

  it('refuses a password in the URL without repeating it', () => {
    const msg = badConfig(() => pgStore({ store: 'postgres://relay:hunter2-secret@db/tunnels' }));
    expect(msg).toMatch(/^store \(--store\): .*store-password-file/);
    expect(msg).not.toContain('hunter2-secret');
  });

  it('refuses unknown URL parameters, bad sslmode, a missing user or database', () => {
    expect(badConfig(() => pgStore({ store: 'postgres://u@h/db?sslmod=disable' }))).toMatch(
      /unknown URL parameter "sslmod"/,
    );
    expect(badConfig(() => pgStore({ store: 'postgres://u@h/db?sslmode=prefer' }))).toMatch(
      /sslmode must be one of/,
    );
    expect(badConfig(() => pgStore({ store: 'postgres://h/db' }))).toMatch(/names no user/);
    expect(badConfig(() => pgStore({ store: 'postgres://u@h/' }))).toMatch(/names no database/);
    expect(badConfig(() => pgStore({ store: 'postgres://u@h:99999/db' }))).toMatch(/store \(--store\)/);
  });

  it('reads the password from --store-password-file, else TUNNEL_RELAY_STORE_PASSWORD', () => {
    const pw = file('pw', 's3cret-from-file\n');
    expect(pgStore({ store: 'postgres://u@h/db', storePasswordFile: pw })?.password?.reveal()).toBe(
      's3cret-from-file',
    );
    expect(
      pgStore({ store: 'postgres://u@h/db' }, { TUNNEL_RELAY_STORE_PASSWORD: 'from-env' }).password?.reveal(),
    ).toBe('from-env');
    const both = pgStore(
      { store: 'postgres://u@h/db', storePasswordFile: pw },
      { TUNNEL_RELAY_STORE_PASSWORD: 'env' },
    );
    expect(both.password?.reveal()).toBe('s3cret-from-file');
    const fromEnvFile = resolveRelayConfig({
      cwd: dir,
      flags: { store: 'postgres://u@h/db' },
      env: { TUNNEL_RELAY_STORE_PASSWORD_FILE: pw },
    }).store;
    expect(fromEnvFile.kind === 'postgres' && fromEnvFile.password?.reveal()).toBe('s3cret-from-file');
    expect(
      badConfig(() => pgStore({ store: 'postgres://u@h/db', storePasswordFile: join(dir, 'none') })),
    ).toMatch(/^store-password-file \(--store-password-file\): cannot read .*none \(ENOENT\)/);
    expect(
      badConfig(() => pgStore({ store: 'postgres://u@h/db', storePasswordFile: file('empty', '\n') })),
    ).toMatch(/one line/);
  });

  it('keeps the password out of JSON and inspect output', () => {
    const s = pgStore({ store: 'postgres://u@h/db' }, { TUNNEL_RELAY_STORE_PASSWORD: 'never-printed-pw' });
    expect(JSON.stringify(s)).not.toContain('never-printed-pw');
    expect(inspect(s, { depth: 10, showHidden: true })).not.toContain('never-printed-pw');
  });

  it('pool size 1-100; CA file must be PEM; the options need a postgres store', () => {
    expect(pgStore({ store: 'postgres://u@h/db', storePoolSize: '3' }).poolSize).toBe(3);
    for (const bad of ['0', '101', 'x', '2.5']) {
      expect(badConfig(() => pgStore({ store: 'postgres://u@h/db', storePoolSize: bad }))).toMatch(
        /^store-pool-size/,
      );
    }
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(pgStore({ store: 'postgres://u@h/db', storeCaFile: file('ca.pem', pem) }).ca).toBe(pem);
    expect(
      badConfig(() => pgStore({ store: 'postgres://u@h/db', storeCaFile: file('ca.txt', 'nope') })),
    ).toMatch(/^store-ca-file .*PEM/);
    expect(
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { store: 'sqlite:x.db', storePoolSize: '3' } })),
    ).toMatch(/^store-pool-size \(--store-pool-size\): only applies to a postgres/);
    expect(badConfig(() => resolveRelayConfig({ cwd: dir, flags: { storeCaFile: 'x' } }))).toMatch(
      /^store-ca-file/,
    );
  });
});
