/**
 * TLS to PostgreSQL: sslmode and --store-ca-file against a throw-away server with a certificate from a
 * fresh test CA (test/helpers/postgres.ts). The server also accepts plain connections, so each case checks
 * in pg_stat_ssl whether the store's connections really are TLS.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../../../test/helpers/postgres.js';
import type { PostgresConnection } from '../../ops/config/postgres-connection.js';
import type { SslMode } from '../../ops/config/postgres-url.js';
import { PostgresStore } from './postgres.js';

let server: ThrowawayPostgres;
let base: PostgresConnection;
beforeAll(async () => {
  server = await startThrowawayPostgres({ tls: true });
  base = await server.createDatabase('tls_test');
}, 120_000);
afterAll(() => server?.stop());

/** Whether the store's connections (application_name tunnel-relay) use TLS, as the server sees them. */
async function storeUsesTls(): Promise<boolean[]> {
  const client = new pg.Client({
    host: server.host,
    port: server.port,
    user: server.user,
    password: server.password,
    database: 'postgres',
  });
  await client.connect();
  try {
    const r = await client.query<{ ssl: boolean }>(
      `SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'tunnel-relay'`,
    );
    return r.rows.map((x) => x.ssl);
  } finally {
    await client.end();
  }
}

async function openWith(sslmode: SslMode | null, ca: string | null, host = '127.0.0.1') {
  return PostgresStore.open({
    connection: { ...base, target: { ...base.target, host, sslmode }, ca },
    connectTimeoutMs: 5_000,
  });
}

describe('PostgreSQL store over TLS', () => {
  it('verify-full with the CA file: TLS on every connection', async () => {
    const store = await openWith('verify-full', server.caPem);
    try {
      await store.ping();
      const tls = await storeUsesTls();
      expect(tls.length).toBeGreaterThan(0);
      expect(tls.every(Boolean)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('a CA file without sslmode means verify-full; the name must match', async () => {
    const store = await openWith(null, server.caPem, 'localhost');
    await store.close();
    // The certificate names 127.0.0.1 and localhost, not 127.0.0.2 (also loopback).
    const err = await openWith(null, server.caPem, '127.0.0.2').catch((e: unknown) => e);
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toMatch(/127\.0\.0\.2.*(does not match|not in the cert's list)/);
  });

  it('verify-ca and verify-full refuse a server their trust store does not sign', async () => {
    for (const mode of ['verify-full', 'verify-ca'] as const) {
      const err = await openWith(mode, null).catch((e: unknown) => e);
      expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
      expect((err as Error).message).toMatch(/certificate/i);
    }
  });

  it('require encrypts without checking; disable does not encrypt', async () => {
    const required = await openWith('require', null);
    try {
      await required.ping();
      expect((await storeUsesTls()).every(Boolean)).toBe(true);
    } finally {
      await required.close();
    }
    // The closed store's connections leave pg_stat_activity shortly after.
    for (let i = 0; i < 60 && (await storeUsesTls()).length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const plain = await openWith('disable', null);
    try {
      await plain.ping();
      expect((await storeUsesTls()).some(Boolean)).toBe(false);
    } finally {
      await plain.close();
    }
  });
});
