/**
 * Agent replicas in both stores: a cluster's PSK admits up to agentReplicas distinct keys, each with its own
 * address, per-pair key, credential and lease; the same key registers again in place; one key more is refused;
 * unjoin and delete free the replicas' addresses.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { PostgresBackend, sqliteBackend } from '../../../test/helpers/store-backends.js';
import { checkAgentReplicas, replicaSlot } from './agent-replicas.js';
import { PostgresStore } from './postgres.js';
import type { AuditEntry, RegisterInput, RemoteKeyLoss, Store } from './types.js';

const audit = (action: string): AuditEntry => ({
  at: 1,
  actor: 'k_test',
  action,
  target: 't',
  source: '127.0.0.1',
  detail: {},
});
const key = (n: number) => `${String(n).padStart(3, '0')}${'B'.repeat(40)}=`;
const reg = (n: number, over: Partial<RegisterInput> = {}): RegisterInput => ({
  cluster: 'r',
  publicKey: key(n),
  agentVersion: '0.1.0',
  claims: {},
  now: 100 + n,
  credential: { id: `a-${n}-${over.now ?? 0}`, hash: `cred-${n}-${over.now ?? 0}`, expiresAt: null },
  presharedKey: `pair-${n}`,
  via: { kind: 'psk', pskHash: 'h-psk' },
  ...over,
});

describe('replica slots', () => {
  it('places keys: primary first, then replicas, the same key in place, full past the count', () => {
    expect(replicaSlot({ primaryKey: null, replicaKeys: [], publicKey: 'a', replicas: 2 })).toBe('primary');
    expect(replicaSlot({ primaryKey: 'a', replicaKeys: [], publicKey: 'b', replicas: 2 })).toBe('replica');
    expect(replicaSlot({ primaryKey: 'a', replicaKeys: ['b'], publicKey: 'b', replicas: 2 })).toBe('replica');
    expect(replicaSlot({ primaryKey: 'a', replicaKeys: ['b'], publicKey: 'a', replicas: 2 })).toBe('primary');
    expect(replicaSlot({ primaryKey: 'a', replicaKeys: ['b'], publicKey: 'c', replicas: 2 })).toBe('full');
  });

  it('refuses replica counts outside 1..10 with a stable code naming the value', () => {
    expect(checkAgentReplicas(3)).toBe(3);
    for (const bad of [0, 11, 2.5, '2']) {
      expect(() => checkAgentReplicas(bad, '--agent-replicas')).toThrow(
        expect.objectContaining({
          code: 'AGENT_REPLICAS_INVALID',
          message: expect.stringContaining(String(bad)),
        }),
      );
    }
  });
});

const postgres = new PostgresBackend();
beforeAll(() => postgres.start(), 120_000);
afterAll(() => postgres.stop());

let s: Store;

describe.each([sqliteBackend, postgres])('agent replicas on $name', (backend) => {
  beforeEach(async () => {
    s = await backend.open();
    await s.createCluster(
      { name: 'r', group: 'g', displayName: 'R', createdAt: 1, agentReplicas: 3 },
      { id: 'p-r', hash: 'h-psk', expiresAt: 10_000 },
      audit('c'),
    );
  });
  afterEach(() => s.close());

  it('admits three distinct keys with their own addresses and refuses a fourth', async () => {
    const results = [];
    for (const n of [1, 2, 3]) results.push(await s.register(reg(n), audit('r')));
    const addresses = results.map((r) => (r.ok ? r.cluster.address : null));
    expect(new Set(addresses).size).toBe(3);
    expect(results.map((r) => (r.ok ? r.cluster.publicKey : null))).toEqual([key(1), key(2), key(3)]);
    expect(results.map((r) => (r.ok ? r.cluster.presharedKey : null))).toEqual([
      'pair-1',
      'pair-2',
      'pair-3',
    ]);
    // Key 4 with the spent PSK: the cluster is full (a clear code); key 2 again: in place, its address kept.
    expect(await s.register(reg(4), audit('r'))).toEqual({ ok: false, reason: 'replicas-full', max: 3 });
    const agents = await s.listAgents('r');
    expect(agents.map((a) => [a.publicKey, a.primary])).toEqual([
      [key(1), true],
      [key(2), false],
      [key(3), false],
    ]);
    expect((await s.getCluster('r'))?.status).toBe('Accepted');
    // Each replica is admitted as itself.
    expect((await s.findClusterByKey(key(2)))?.address).toBe(addresses[1]);
    const again = await s.register(reg(2, { now: 900 }), audit('r'));
    expect(again.ok && again.cluster.address).toBe(addresses[1]);
  });

  it('re-registers a known key in place; a new key past the count is AGENT_REPLICAS_FULL', async () => {
    await s.createCluster(
      { name: 'q', group: 'g', displayName: 'Q', createdAt: 1, agentReplicas: 2 },
      { id: 'p-q', hash: 'h-q', expiresAt: 10_000 },
      audit('c'),
    );
    const q = (n: number, now: number) => reg(n, { cluster: 'q', now, via: { kind: 'psk', pskHash: 'h-q' } });
    const first = await s.register(q(1, 10), audit('r'));
    const again = await s.register(q(1, 11), audit('r'));
    expect(first.ok && again.ok && first.cluster.address === again.cluster.address).toBe(true);
    expect(await s.listAgents('q')).toHaveLength(1);
    // Refused at the count, before the PSK is spent: a third agent sees a clear error, not a used PSK.
    await s.register(q(2, 12), audit('r'));
    await s.createCluster(
      { name: 'full', group: 'g', displayName: 'F', createdAt: 1, agentReplicas: 2 },
      { id: 'p-f', hash: 'h-f', expiresAt: 10_000 },
      audit('c'),
    );
    const f = (n: number) => reg(n + 10, { cluster: 'full', via: { kind: 'psk', pskHash: 'h-f' } });
    await s.register(f(1), audit('r'));
    await s.register(f(2), audit('r'));
    await s.rotatePsk('full', { id: 'p-f2', hash: 'h-f2', expiresAt: 10_000 }, audit('rot'));
    const third = reg(13, { cluster: 'full', via: { kind: 'psk', pskHash: 'h-f2' } });
    expect(await s.register(third, audit('r'))).toEqual({ ok: false, reason: 'replicas-full', max: 2 });
  });

  it('gives each replica its own credential and lease; unjoin and delete free its address', async () => {
    for (const n of [1, 2]) await s.register(reg(n), audit('r'));
    const who = await s.findAgent('cred-2-0');
    expect(who).toMatchObject({ cluster: 'r', publicKey: key(2) });
    expect((await s.findAgent('cred-1-0'))?.publicKey).toBe(key(1));
    expect(await s.renewLease('r', { now: 500, graceMs: 10, publicKey: key(2) })).toBe(true);
    const agents = await s.listAgents('r');
    expect(agents.map((a) => a.leaseRenewAt)).toEqual([null, 500]);
    const freed = agents[1]!.address;
    const gone = await s.unjoin('r', 600, audit('u'), key(2));
    expect(gone?.publicKey).toBe(key(2));
    expect(await s.findAgent('cred-2-0')).toBeNull();
    expect(await s.findAgent('cred-1-0')).not.toBeNull();
    expect((await s.listAgents('r')).map((a) => a.publicKey)).toEqual([key(1)]);
    // The freed address goes to the next agent.
    const again = await s.register(reg(5), audit('r'));
    expect(again.ok && again.cluster.address).toBe(freed);
    await s.deleteCluster('r', audit('d'));
    expect(await s.listAgents()).toEqual([]);
    expect(await s.findClusterByKey(key(5))).toBeNull();
  });
});

describe('agent replicas in a fleet (PostgreSQL)', () => {
  it("tells the other relay replicas of every agent's lost key: deny, replica unjoin, delete", async () => {
    const conn = await postgres.newDatabase();
    const [a, b] = await Promise.all([
      PostgresStore.open({ connection: conn }),
      PostgresStore.open({ connection: conn }),
    ]);
    try {
      const lost: RemoteKeyLoss[] = [];
      b.onRemoteKeyLoss((e) => lost.push(e));
      await a.createCluster(
        { name: 'r', group: 'g', displayName: 'R', createdAt: 1, agentReplicas: 2 },
        { id: 'p-r', hash: 'h-psk', expiresAt: 10_000 },
        audit('c'),
      );
      for (const n of [1, 2]) await a.register(reg(n), audit('r'));
      await a.setClusterStatus('r', { status: 'Denied', now: 200, presharedKey: 'pp' }, audit('deny'));
      await vi.waitFor(
        () =>
          expect(lost.map((e) => `${e.kind} ${e.publicKey}`).sort()).toEqual([
            `cluster-denied ${key(1)}`,
            `cluster-denied ${key(2)}`,
          ]),
        { timeout: 2_000, interval: 10 },
      );
      await a.setClusterStatus('r', { status: 'Accepted', now: 300, presharedKey: 'pp' }, audit('accept'));
      lost.length = 0;
      await a.unjoin('r', 400, audit('u'), key(2));
      await vi.waitFor(
        () => expect(lost).toEqual([{ kind: 'agent-unjoined', cluster: 'r', publicKey: key(2) }]),
        {
          timeout: 2_000,
          interval: 10,
        },
      );
      lost.length = 0;
      await a.rotatePsk('r', { id: 'p-r2', hash: 'h-r2', expiresAt: 10_000 }, audit('rot'));
      const third = await a.register(reg(3, { now: 500, via: { kind: 'psk', pskHash: 'h-r2' } }), audit('r'));
      expect(third.ok).toBe(true);
      await a.deleteCluster('r', audit('d'));
      await vi.waitFor(
        () =>
          expect(
            lost
              .filter((e) => e.kind === 'cluster-deleted')
              .map((e) => e.publicKey)
              .sort(),
          ).toEqual([key(1), key(3)]),
        {
          timeout: 2_000,
          interval: 10,
        },
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
