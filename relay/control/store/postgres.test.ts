/**
 * What only the PostgreSQL store has to get right: several replicas (store instances) on one database at
 * once, migrations racing at start, change notifications between replicas, and start-up failures that
 * name the server but never the password. Runs against a throw-away server (test/helpers/postgres.ts).
 */
import { createServer, type Server } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { PostgresBackend } from '../../../test/helpers/store-backends.js';
import { freePort } from '../../../test/helpers/tinyproxy.js';
import type { PostgresConnection } from '../../ops/config/postgres-connection.js';
import { PostgresStore } from './postgres.js';
import { PG_MIGRATIONS } from './postgres-migrations.js';
import type { AuditEntry, RegisterInput, RemoteKeyLoss, Store } from './types.js';

const backend = new PostgresBackend();
beforeAll(() => backend.start(), 120_000);
afterAll(() => backend.stop());

const opened: Store[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function replicas(n: number, connection?: PostgresConnection): Promise<PostgresStore[]> {
  const conn = connection ?? (await backend.newDatabase());
  const stores = await Promise.all(Array.from({ length: n }, () => PostgresStore.open({ connection: conn })));
  opened.push(...stores);
  return stores;
}

const audit = (action: string): AuditEntry => ({
  at: 1,
  actor: 'k_test',
  action,
  target: 't',
  source: '127.0.0.1',
  detail: {},
});
const key = (n: number) => `${String(n).padStart(3, '0')}${'B'.repeat(40)}=`;

function regInput(cluster: string, n: number): RegisterInput {
  return {
    cluster,
    publicKey: key(n),
    agentVersion: '0.1.0',
    claims: {},
    now: 100,
    credential: { id: `a-${cluster}-${n}`, hash: `cred-${cluster}-${n}`, expiresAt: null },
    presharedKey: `pair-${n}`,
    via: { kind: 'psk', pskHash: `h-${cluster}` },
  };
}

async function createCluster(store: Store, name: string): Promise<void> {
  await store.createCluster(
    { name, group: 'default', displayName: name, createdAt: 1 },
    { id: `p-${name}`, hash: `h-${name}`, expiresAt: 10_000 },
    audit('c'),
  );
}

describe('PostgreSQL store shared by replicas', () => {
  it('the same PSK sent to two replicas at once registers exactly once', async () => {
    const [a, b] = await replicas(2);
    for (let round = 0; round < 10; round++) {
      const name = `psk-race-${round}`;
      await createCluster(a!, name);
      const results = await Promise.all([
        a!.register(regInput(name, 2 * round), audit('r')),
        b!.register(regInput(name, 2 * round + 1), audit('r')),
      ]);
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, reason: 'rejected', why: 'used' }]);
      const c = await b!.getCluster(name);
      const winner = 2 * round + results.findIndex((r) => r.ok);
      expect(c?.publicKey).toBe(key(winner));
    }
  });

  it('registrations racing on two replicas get distinct addresses', async () => {
    const [a, b] = await replicas(2);
    const names = Array.from({ length: 16 }, (_, i) => `addr-${i}`);
    for (const n of names) await createCluster(a!, n);
    const results = await Promise.all(
      names.map((n, i) => (i % 2 === 0 ? a! : b!).register(regInput(n, 100 + i), audit('r'))),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    const addresses = (await a!.listClusters()).map((c) => c.address);
    expect(new Set(addresses).size).toBe(names.length);
    expect(addresses).not.toContain(null);
  });

  it('64 registrations at once on four replicas all succeed, none retried to exhaustion', async () => {
    const stores = await replicas(4);
    const names = Array.from({ length: 64 }, (_, i) => `burst-${i}`);
    for (const n of names) await createCluster(stores[0]!, n);
    const results = await Promise.all(
      names.map((n, i) => stores[i % 4]!.register(regInput(n, 200 + i), audit('r'))),
    );
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const addresses = (await stores[1]!.listClusters()).map((c) => c.address);
    expect(new Set(addresses).size).toBe(names.length);
  });

  it('64 clusters created at once on four replicas are all created', async () => {
    const stores = await replicas(4);
    const names = Array.from({ length: 64 }, (_, i) => `made-${i}`);
    const results = await Promise.allSettled(names.map((n, i) => createCluster(stores[i % 4]!, n)));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(await stores[2]!.listClusters()).toHaveLength(64);
  });

  it('two replicas revoking the two last admin keys at once leave one', async () => {
    const [a, b] = await replicas(2);
    for (let round = 0; round < 10; round++) {
      // Each round's keys expire before the next round's revocations, so only they count then.
      const now = round * 100 + 50;
      const ids = [`adm-${round}-a`, `adm-${round}-b`];
      for (const id of ids) {
        await a!.createAccessKey(
          {
            id,
            role: 'admin',
            description: '',
            createdAt: 1,
            expiresAt: (round + 1) * 100,
            revokedAt: null,
            minted: null,
          },
          `hash-${id}`,
          audit('t'),
        );
      }
      const results = await Promise.all([
        a!.revokeAccessKey(ids[0]!, now, audit('rv')),
        b!.revokeAccessKey(ids[1]!, now, audit('rv')),
      ]);
      expect([...results].sort()).toEqual(['last-admin', 'revoked']);
    }
  });

  it('a cluster created on one replica is seen by the other', async () => {
    const [a, b] = await replicas(2);
    await createCluster(a!, 'seen');
    expect((await b!.getCluster('seen'))?.name).toBe('seen');
    expect(await b!.deleteCluster('seen', audit('d'))).not.toBeNull();
    expect(await a!.getCluster('seen')).toBeNull();
  });

  it("a key revoked on one replica reaches the other's listeners within a second, and its own once", async () => {
    const [a, b] = await replicas(2);
    await a!.createAccessKey(
      {
        id: 'kv',
        role: 'viewer',
        description: '',
        createdAt: 1,
        expiresAt: null,
        revokedAt: null,
        minted: null,
      },
      'hash-kv',
      audit('t'),
    );
    const onA: string[] = [];
    const onB: string[] = [];
    a!.onAccessKeyRevoked((id) => onA.push(id));
    const seenByB = new Promise<number>((resolve) =>
      b!.onAccessKeyRevoked((id) => {
        onB.push(id);
        resolve(Date.now());
      }),
    );
    const start = Date.now();
    expect(await a!.revokeAccessKey('kv', 5, audit('rv'))).toBe('revoked');
    expect(onA).toEqual(['kv']);
    const at = await Promise.race([seenByB, new Promise<number>((r) => setTimeout(() => r(-1), 1000))]);
    expect(at).not.toBe(-1);
    expect(at - start).toBeLessThan(1000);
    // nothing more arrives: A does not act on its own notification, a refused revoke sends none
    expect(await b!.revokeAccessKey('kv', 6, audit('rv'))).toBe('not-found');
    await new Promise((r) => setTimeout(r, 300));
    expect(onA).toEqual(['kv']);
    expect(onB).toEqual(['kv']);
  });
});

describe('keys taken away on another replica', () => {
  it('reach the other replica within a second: deny, replace, unjoin, delete; never the replica itself', async () => {
    const [a, b] = await replicas(2);
    const onA: RemoteKeyLoss[] = [];
    const onB: RemoteKeyLoss[] = [];
    a!.onRemoteKeyLoss((e) => onA.push(e));
    b!.onRemoteKeyLoss((e) => onB.push(e));
    const expectOnB = async (expected: RemoteKeyLoss) => {
      const before = onB.length;
      await vi.waitFor(() => expect(onB.slice(before)).toEqual([expected]), { timeout: 1000, interval: 10 });
    };
    await createCluster(a!, 'lost');
    expect((await a!.register(regInput('lost', 1), audit('r'))).ok).toBe(true);

    let wait = expectOnB({ kind: 'cluster-denied', cluster: 'lost', publicKey: key(1) });
    await a!.setClusterStatus('lost', { status: 'Denied', now: 200, presharedKey: 'pp' }, audit('deny'));
    await wait;
    await a!.setClusterStatus('lost', { status: 'Accepted', now: 300, presharedKey: 'pp' }, audit('accept'));

    await a!.rotatePsk('lost', { id: 'p-lost-2', hash: 'h-lost-2', expiresAt: 10_000 }, audit('rot'));
    wait = expectOnB({ kind: 'agent-unjoined', cluster: 'lost', publicKey: key(1) });
    const second = { ...regInput('lost', 2), via: { kind: 'psk' as const, pskHash: 'h-lost-2' } };
    expect((await a!.register(second, audit('r'))).ok).toBe(true);
    await wait;

    wait = expectOnB({ kind: 'agent-unjoined', cluster: 'lost', publicKey: key(2) });
    await a!.unjoin('lost', 400, audit('unjoin'));
    await wait;

    await a!.rotatePsk('lost', { id: 'p-lost-3', hash: 'h-lost-3', expiresAt: 10_000 }, audit('rot'));
    const third = { ...regInput('lost', 3), via: { kind: 'psk' as const, pskHash: 'h-lost-3' } };
    expect((await b!.register(third, audit('r'))).ok).toBe(true);
    wait = expectOnB({ kind: 'cluster-deleted', cluster: 'lost', publicKey: key(3) });
    await a!.deleteCluster('lost', audit('delete'));
    await wait;
    // Changes without an agent key tell no one; the replica that made a change is not told.
    await createCluster(a!, 'keyless');
    await a!.setClusterStatus('keyless', { status: 'Denied', now: 500, presharedKey: 'pp' }, audit('deny'));
    await a!.deleteCluster('keyless', audit('delete'));
    await new Promise((r) => setTimeout(r, 300));
    expect(onB).toHaveLength(4);
    expect(onA).toEqual([]);
  });
});

describe('PostgreSQL store migrations', () => {
  it('replicas starting together on an empty database apply each migration once', async () => {
    const connection = await backend.newDatabase();
    await replicas(6, connection);
    const client = new pg.Client({
      host: connection.target.host,
      port: connection.target.port,
      user: connection.target.user,
      password: connection.password!,
      database: connection.target.database,
    });
    await client.connect();
    try {
      const r = await client.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(r.rows.map((x) => x.version)).toEqual(PG_MIGRATIONS.map((_, i) => i + 1));
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)');
    } finally {
      await client.end();
    }
    await expect(PostgresStore.open({ connection })).rejects.toSatisfy(
      (e) => isTunnelError(e, 'BAD_CONFIG') && /schema version 999/.test((e as Error).message),
    );
  });

  it('keeps state across reopen', async () => {
    const connection = await backend.newDatabase();
    const [a] = await replicas(1, connection);
    await createCluster(a!, 'kept');
    await a!.close();
    const [b] = await replicas(1, connection);
    expect((await b!.getCluster('kept'))?.name).toBe('kept');
  });
});

describe('PostgreSQL store start-up failures', () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  it('a server that refuses connections: BAD_CONFIG naming host, port and database', async () => {
    const port = await freePort();
    const connection: PostgresConnection = {
      target: { host: '127.0.0.1', port, database: 'relaydb', user: 'relay', sslmode: null },
      password: 'secret-password-1',
      ca: null,
    };
    const err = await PostgresStore.open({ connection }).catch((e: unknown) => e);
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toContain(`postgres://relay@127.0.0.1:${port}/relaydb`);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect((err as Error).message).not.toContain('secret-password-1');
  });

  it('a server that never answers: BAD_CONFIG within the connect timeout', async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    closers.push(() => silent.close());
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const connection: PostgresConnection = {
      target: { host: '127.0.0.1', port, database: 'relaydb', user: 'relay', sslmode: null },
      password: 'secret-password-2',
      ca: null,
    };
    const start = Date.now();
    const err = await PostgresStore.open({ connection, connectTimeoutMs: 500 }).catch((e: unknown) => e);
    expect(Date.now() - start).toBeLessThan(3000);
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toContain(`127.0.0.1:${port}`);
    expect((err as Error).message).not.toContain('secret-password-2');
  });

  it('a wrong password: BAD_CONFIG that does not repeat it', async () => {
    const connection = await backend.newDatabase();
    const wrong = { ...connection, password: 'wrong-password-xyz' };
    const err = await PostgresStore.open({ connection: wrong }).catch((e: unknown) => e);
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toMatch(/password authentication failed/);
    expect((err as Error).message).not.toContain('wrong-password-xyz');
  });
});

describe('PostgreSQL store across a server restart', () => {
  it('answers again, and change notifications resume, after the server comes back', async () => {
    const connection = await backend.newDatabase();
    const errors: string[] = [];
    const [a, b] = await Promise.all(
      [0, 1].map(() => PostgresStore.open({ connection, onError: (m) => errors.push(m) })),
    );
    opened.push(a!, b!);
    await backend.server.halt();
    await expect(a!.ping()).rejects.toBeDefined();
    await backend.server.resume();
    await vi.waitFor(() => a!.ping(), { timeout: 10_000, interval: 100 });
    const seen: string[] = [];
    b!.onAccessKeyRevoked((id) => seen.push(id));
    // B's listening connection reconnects with backoff; a revocation after that reaches it within a second.
    await vi.waitFor(
      async () => {
        const id = `after-restart-${seen.length}-${Date.now()}`;
        await a!.createAccessKey(
          {
            id,
            role: 'viewer',
            description: '',
            createdAt: 1,
            expiresAt: null,
            revokedAt: null,
            minted: null,
          },
          `hash-${id}`,
          audit('t'),
        );
        await a!.revokeAccessKey(id, 5, audit('rv'));
        await vi.waitFor(() => expect(seen).toContain(id), { timeout: 1000, interval: 20 });
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(errors.some((m) => m.includes('change notifications lost'))).toBe(true);
    expect(errors.join('\n')).not.toContain(backend.server.password);
  }, 40_000);
});
