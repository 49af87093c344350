import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { PostgresBackend, sqliteBackend } from '../../../test/helpers/store-backends.js';
import { ENDED_KEY_RETENTION_MS } from './access-key-caps.js';
import { PATH_REPORT_STALE_MS } from './agent-path-row.js';
import { MIGRATIONS } from './migrations.js';
import { PATH_HISTORY_MAX } from './path-history-row.js';
import { SqliteStore } from './sqlite.js';
import type {
  AccessKeyRecord,
  AgentPathRecord,
  AuditEntry,
  RegisterInput,
  RelayedReasonCount,
  Store,
} from './types.js';

const audit = (action: string, target = 't'): AuditEntry => ({
  at: 1,
  actor: 'k_test',
  action,
  target,
  source: '127.0.0.1',
  detail: {},
});
const secret = (id: string, expiresAt: number | null = 10_000) => ({ id, hash: `h-${id}`, expiresAt });
const accessKey = (id: string, over: Partial<AccessKeyRecord>): AccessKeyRecord => ({
  id,
  role: 'viewer',
  description: '',
  createdAt: 1,
  expiresAt: null,
  revokedAt: null,
  minted: null,
  ...over,
});
const key = (n: number) => `${String(n).padStart(3, '0')}${'A'.repeat(40)}=`;

function regInput(cluster: string, over: Partial<RegisterInput> = {}): RegisterInput {
  return {
    cluster,
    publicKey: key(1),
    agentVersion: '0.1.0',
    claims: { a: 'b' },
    now: 100,
    credential: { id: `a-${cluster}`, hash: `cred-${cluster}`, expiresAt: null },
    presharedKey: 'psk-pair',
    via: { kind: 'psk', pskHash: `h-p-${cluster}` },
    ...over,
  };
}

const postgres = new PostgresBackend();
beforeAll(() => postgres.start(), 120_000);
afterAll(() => postgres.stop());

let s: Store;

// The same suite against every store: the stores must behave the same.
describe.each([sqliteBackend, postgres])('store on $name', (backend) => {
  beforeEach(async () => {
    s = await backend.open();
  });
  afterEach(() => s.close());

  it('creates clusters, refuses duplicates, enforces the cluster cap', async () => {
    const small = await backend.open({ maxClusters: 2 });
    await small.createCluster(
      { name: 'a', group: 'g', displayName: 'A', createdAt: 1 },
      secret('p1'),
      audit('c'),
    );
    await expect(
      small.createCluster(
        { name: 'a', group: 'g', displayName: 'A', createdAt: 1 },
        secret('p2'),
        audit('c'),
      ),
    ).rejects.toSatisfy((e) => isTunnelError(e, 'CONFLICT'));
    await small.createCluster(
      { name: 'b', group: 'h', displayName: 'B', createdAt: 1 },
      secret('p3'),
      audit('c'),
    );
    await expect(
      small.createCluster(
        { name: 'c', group: 'g', displayName: 'C', createdAt: 1 },
        secret('p4'),
        audit('c'),
      ),
    ).rejects.toSatisfy((e) => isTunnelError(e, 'LIMIT_EXCEEDED'));
    expect((await small.listClusters({ group: 'g' })).map((c) => c.name)).toEqual(['a']);
    expect(await small.countClustersByStatus()).toEqual({ Pending: 2, Accepted: 0, Denied: 0 });
    // the failed inserts wrote no audit rows (one transaction each)
    expect((await small.listAudit(10)).length).toBe(2);
    await small.close();
  });

  it('consumes a PSK once; refuses expired, revoked, wrong-cluster PSKs', async () => {
    await s.createCluster(
      { name: 'e1', group: 'default', displayName: 'e1', createdAt: 1 },
      secret('p-e1'),
      audit('c'),
    );
    await s.createCluster(
      { name: 'e2', group: 'default', displayName: 'e2', createdAt: 1 },
      secret('p-e2', 50),
      audit('c'),
    );
    // wrong cluster
    expect(await s.register(regInput('e2', { via: { kind: 'psk', pskHash: 'h-p-e1' } }), audit('r'))).toEqual(
      { ok: false, reason: 'rejected', why: 'wrong' },
    );
    // expired (expiresAt 50, now 100)
    expect(await s.register(regInput('e2'), audit('r'))).toEqual({
      ok: false,
      reason: 'rejected',
      why: 'expired',
    });
    expect(await s.currentPsk('e2', 100)).toEqual({ state: 'expired', expiresAt: 50, usedAt: null });
    expect(await s.currentPsk('e1', 100)).toMatchObject({ state: 'unused', usedAt: null });
    const ok = await s.register(regInput('e1'), audit('r'));
    expect(ok.ok && ok.cluster.status).toBe('Accepted');
    expect(ok.ok && ok.cluster.address).toBe('100.64.0.2');
    expect(ok.ok && ok.cluster.presharedKey).toBe('psk-pair');
    expect(await s.findAgent('cred-e1')).toEqual({
      credentialId: 'a-e1',
      cluster: 'e1',
      status: 'Accepted',
      publicKey: key(1),
    });
    // reuse
    expect(await s.register(regInput('e1', { publicKey: key(2) }), audit('r'))).toEqual({
      ok: false,
      reason: 'rejected',
      why: 'used',
    });
    expect(await s.currentPsk('e1', 200)).toMatchObject({ state: 'used', usedAt: 100 });
    // rotate revokes the unused one and the new one works; the new credential replaces the old
    await s.createCluster(
      { name: 'e3', group: 'default', displayName: 'e3', createdAt: 1 },
      secret('p-e3'),
      audit('c'),
    );
    await s.rotatePsk('e3', { id: 'p-e3b', hash: 'h-new', expiresAt: 10_000 }, audit('rot'));
    expect(await s.register(regInput('e3', { publicKey: key(3) }), audit('r'))).toEqual({
      ok: false,
      reason: 'rejected',
      why: 'revoked',
    });
    expect(await s.currentPsk('e3', 100)).toEqual({ state: 'unused', expiresAt: 10_000, usedAt: null });
    expect(await s.currentPsk('nope', 100)).toBeNull();
    const r3 = await s.register(
      regInput('e3', { publicKey: key(3), via: { kind: 'psk', pskHash: 'h-new' } }),
      audit('r'),
    );
    expect(r3.ok && r3.cluster.address).toBe('100.64.0.3');
  });

  it('refuses a public key already held by another cluster', async () => {
    await s.createCluster(
      { name: 'x', group: 'default', displayName: 'x', createdAt: 1 },
      secret('p-x'),
      audit('c'),
    );
    await s.createCluster(
      { name: 'y', group: 'default', displayName: 'y', createdAt: 1 },
      secret('p-y'),
      audit('c'),
    );
    expect((await s.register(regInput('x'), audit('r'))).ok).toBe(true);
    expect(await s.register(regInput('y'), audit('r'))).toEqual({ ok: false, reason: 'key-in-use' });
    // the refused attempt did not consume y's PSK
    expect((await s.register(regInput('y', { publicKey: key(9) }), audit('r'))).ok).toBe(true);
  });

  it('bootstrap registrations stay Pending; accept allocates, deny keeps the address, unjoin frees it', async () => {
    const via = { kind: 'bootstrap' as const, keyId: 'k_b', group: 'default' };
    const r = await s.register(regInput('boot', { via }), audit('r'));
    expect(r.ok && r.cluster.status).toBe('Pending');
    expect(r.ok && r.cluster.address).toBeNull();
    // same key again: reused; another key: conflict
    expect(
      (
        await s.register(
          regInput('boot', { via, credential: { id: 'a2', hash: 'c2', expiresAt: null } }),
          audit('r'),
        )
      ).ok,
    ).toBe(true);
    expect(await s.findAgent('cred-boot')).toBeNull(); // the first credential was revoked
    expect(await s.register(regInput('boot', { via, publicKey: key(5) }), audit('r'))).toEqual({
      ok: false,
      reason: 'conflict',
    });
    const acc = await s.setClusterStatus(
      'boot',
      { status: 'Accepted', now: 200, presharedKey: 'pp' },
      audit('accept'),
    );
    expect(acc?.address).toBe('100.64.0.2');
    expect(acc?.presharedKey).toBe('pp');
    const den = await s.setClusterStatus(
      'boot',
      { status: 'Denied', now: 300, presharedKey: 'other' },
      audit('deny'),
    );
    expect(den?.status).toBe('Denied');
    expect(den?.address).toBe('100.64.0.2');
    const acc2 = await s.setClusterStatus(
      'boot',
      { status: 'Accepted', now: 400, presharedKey: 'other' },
      audit('accept'),
    );
    expect(acc2?.presharedKey).toBe('pp'); // not re-issued
    await s.unjoin('boot', 500, audit('unjoin'));
    const after = await s.getCluster('boot');
    expect(after).toMatchObject({ status: 'Pending', publicKey: null, address: null, presharedKey: null });
    expect(await s.findAgent('c2')).toBeNull();
  });

  it('allocates the lowest free address and never one still allocated', async () => {
    for (const n of [1, 2, 3, 4]) {
      await s.createCluster(
        { name: `c${n}`, group: 'default', displayName: 'c', createdAt: 1 },
        secret(`p-c${n}`),
        audit('c'),
      );
      const r = await s.register(regInput(`c${n}`, { publicKey: key(n) }), audit('r'));
      expect(r.ok && r.cluster.address).toBe(`100.64.0.${n + 1}`);
    }
    await s.deleteCluster('c2', audit('d')); // frees .3
    await s.createCluster(
      { name: 'c5', group: 'default', displayName: 'c', createdAt: 1 },
      secret('p-c5'),
      audit('c'),
    );
    const r5 = await s.register(regInput('c5', { publicKey: key(5) }), audit('r'));
    expect(r5.ok && r5.cluster.address).toBe('100.64.0.3');
    await s.createCluster(
      { name: 'c6', group: 'default', displayName: 'c', createdAt: 1 },
      secret('p-c6'),
      audit('c'),
    );
    const r6 = await s.register(regInput('c6', { publicKey: key(6) }), audit('r'));
    expect(r6.ok && r6.cluster.address).toBe('100.64.0.6');
    const addrs = (await s.listClusters()).map((c) => c.address);
    expect(new Set(addrs).size).toBe(addrs.length);
  });

  it('deleting a cluster removes its PSKs and credentials', async () => {
    await s.createCluster(
      { name: 'd', group: 'default', displayName: 'd', createdAt: 1 },
      secret('p-d'),
      audit('c'),
    );
    await s.register(regInput('d'), audit('r'));
    const del = await s.deleteCluster('d', audit('d'));
    expect(del?.publicKey).toBe(key(1));
    expect(await s.findAgent('cred-d')).toBeNull();
    expect(await s.findClusterByKey(key(1))).toBeNull();
    expect(await s.deleteCluster('d', audit('d'))).toBeNull();
  });

  it('renews leases: availableSince starts a new run only after a gap longer than grace', async () => {
    await s.createCluster(
      { name: 'l', group: 'default', displayName: 'l', createdAt: 1 },
      secret('p-l'),
      audit('c'),
    );
    expect(await s.renewLease('l', { now: 1, graceMs: 100 })).toBe(false); // no agent yet
    expect(await s.renewLease('absent', { now: 1, graceMs: 100 })).toBe(false);
    await s.register(regInput('l'), audit('r'));
    expect(
      await s.renewLease('l', { now: 1000, graceMs: 100, claims: { x: 'y' }, agentVersion: '0.2.0' }),
    ).toBe(true);
    expect(await s.getCluster('l')).toMatchObject({
      leaseRenewAt: 1000,
      availableSince: 1000,
      claims: { x: 'y' },
      agentVersion: '0.2.0',
    });
    await s.renewLease('l', { now: 1050, graceMs: 100 });
    expect(await s.getCluster('l')).toMatchObject({
      leaseRenewAt: 1050,
      availableSince: 1000,
      claims: { x: 'y' },
    });
    await s.renewLease('l', { now: 1200, graceMs: 100 });
    expect(await s.getCluster('l')).toMatchObject({ leaseRenewAt: 1200, availableSince: 1200 });
  });

  it("keeps the agent's relayed reason of its last renewal; unjoin clears it", async () => {
    await s.createCluster(
      { name: 'why', group: 'default', displayName: 'why', createdAt: 1 },
      secret('p-why'),
      audit('c'),
    );
    expect((await s.getCluster('why'))?.agentReason).toBeNull();
    expect(await s.renewLease('why', { now: 1, graceMs: 100, agentReason: '443-only' })).toBe(false);
    expect((await s.getCluster('why'))?.agentReason).toBeNull(); // no agent: nothing written
    await s.register(regInput('why'), audit('r'));
    await s.renewLease('why', { now: 1000, graceMs: 100, agentReason: '443-only' });
    expect(await s.getCluster('why')).toMatchObject({ leaseRenewAt: 1000, agentReason: '443-only' });
    expect((await s.listClusters()).find((c) => c.name === 'why')?.agentReason).toBe('443-only');
    await s.renewLease('why', { now: 1010, graceMs: 100, agentReason: 'mapping-varies' });
    expect((await s.getCluster('why'))?.agentReason).toBe('mapping-varies');
    // A renewal without a reason (the agent went direct, or an older agent) clears it.
    await s.renewLease('why', { now: 1020, graceMs: 100 });
    expect((await s.getCluster('why'))?.agentReason).toBeNull();
    await s.renewLease('why', { now: 1030, graceMs: 100, agentReason: 'relay-only' });
    await s.unjoin('why', 1040, audit('unjoin'));
    expect((await s.getCluster('why'))?.agentReason).toBeNull();
  });

  it("keeps each agent's last reported path; deleting the cluster removes it", async () => {
    for (const name of ['pa', 'pb'])
      await s.createCluster(
        { name, group: 'g', displayName: name, createdAt: 1 },
        secret(`p-${name}`),
        audit('c'),
      );
    const direct = {
      cluster: 'pa',
      path: 'direct' as const,
      remote: '198.51.100.7:41641',
      rttDirectMs: 0.412,
      rttRelayedMs: 3.5,
      lastSwitchAt: 1_700_000_000_123,
      reason: null,
      reportedAt: 1_700_000_000_500,
    };
    await s.saveAgentPath(direct);
    expect(await s.agentPaths('pa')).toEqual([direct]);
    const relayed = {
      ...direct,
      path: 'relayed' as const,
      remote: null,
      rttDirectMs: null,
      reason: 'direct-silent',
      reportedAt: 1_700_000_009_000,
    };
    await s.saveAgentPath(relayed);
    await s.saveAgentPath({ ...relayed, cluster: 'pb', reason: 'udp-blocked' });
    // A cluster that does not exist (deleted meanwhile): nothing written, no error.
    await s.saveAgentPath({ ...relayed, cluster: 'gone' });
    const all = await s.agentPaths();
    expect(all.sort((a, b) => a.cluster.localeCompare(b.cluster))).toEqual([
      relayed,
      { ...relayed, cluster: 'pb', reason: 'udp-blocked' },
    ]);
    await s.deleteCluster('pa', audit('d', 'pa'));
    expect((await s.agentPaths()).map((p) => p.cluster)).toEqual(['pb']);
  });

  it('keeps the newest path changes of each agent, newest first, and only real changes', async () => {
    await s.createCluster(
      { name: 'ph', group: 'g', displayName: 'ph', createdAt: 1 },
      secret('p-ph'),
      audit('c'),
    );
    const base = {
      cluster: 'ph',
      path: 'relayed' as const,
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: 3,
      lastSwitchAt: 1_000,
      reason: 'confirming',
      reportedAt: 1_000,
    };
    await s.saveAgentPath(base);
    // The same path, remote and reason again (an RTT refresh): no new entry.
    await s.saveAgentPath({ ...base, rttRelayedMs: 9, reportedAt: 2_000 });
    await s.saveAgentPath({
      ...base,
      path: 'direct',
      remote: '198.51.100.7:41641',
      reason: null,
      lastSwitchAt: 3_000,
    });
    await s.saveAgentPath({
      ...base,
      path: 'direct',
      remote: '198.51.100.7:50000',
      reason: null,
      lastSwitchAt: 4_000,
    });
    expect(await s.pathHistory('ph')).toEqual([
      { at: 4_000, path: 'direct', remote: '198.51.100.7:50000', reason: null, reasonFrom: null },
      { at: 3_000, path: 'direct', remote: '198.51.100.7:41641', reason: null, reasonFrom: null },
      { at: 1_000, path: 'relayed', remote: null, reason: 'confirming', reasonFrom: 'hub' },
    ]);
    for (let i = 0; i < 30; i++) {
      const direct = i % 2 === 0;
      await s.saveAgentPath({
        ...base,
        path: direct ? 'direct' : 'relayed',
        remote: direct ? '198.51.100.7:41641' : null,
        reason: direct ? null : 'direct-silent',
        lastSwitchAt: 10_000 + i,
      });
    }
    const kept = await s.pathHistory('ph');
    expect(kept).toHaveLength(PATH_HISTORY_MAX);
    expect(kept[0]).toEqual({
      at: 10_029,
      path: 'relayed',
      remote: null,
      reason: 'direct-silent',
      reasonFrom: 'hub',
    });
    expect(kept.map((c) => c.at)).toEqual([...kept.map((c) => c.at)].sort((a, b) => b - a));
    expect(await s.pathHistory('nobody')).toEqual([]);
    await s.deleteCluster('ph', audit('d', 'ph'));
    expect(await s.pathHistory('ph')).toEqual([]);
  });

  it("records the reason the cluster shows: the agent's while relayed, and a change of it alone", async () => {
    await s.createCluster(
      { name: 'ar', group: 'g', displayName: 'ar', createdAt: 1 },
      secret('p-ar'),
      audit('c'),
    );
    await s.register(regInput('ar'), audit('r'));
    const relayed = {
      cluster: 'ar',
      path: 'relayed' as const,
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: 3,
      lastSwitchAt: 1_000,
      reason: 'no-candidates',
      reportedAt: 1_000,
    };
    const lease = (now: number, agentReason: string | null) =>
      s.renewLease('ar', { now, graceMs: 100, agentReason });
    await s.saveAgentPath(relayed);
    // The agent says why at its next renewal: an entry of its own, though the hub's report did not change.
    await lease(2_000, '443-only');
    await lease(2_500, '443-only'); // the same again: nothing
    // The hub's reason changes under the agent's: the cluster still shows the agent's, so nothing either.
    await s.saveAgentPath({ ...relayed, reason: 'no-answer', reportedAt: 3_000 });
    const direct = { ...relayed, path: 'direct' as const, remote: '198.51.100.7:41641', reason: null };
    await s.saveAgentPath({ ...direct, lastSwitchAt: 4_000, reportedAt: 4_000 });
    // While direct the agent's reason shows nowhere: no entry.
    await lease(4_500, 'udp-blocked');
    // Back to relayed: the entry carries the agent's reason held since.
    await s.saveAgentPath({ ...relayed, reason: 'direct-silent', lastSwitchAt: 5_000, reportedAt: 5_000 });
    // The agent stops reporting one: the hub's shows again.
    await lease(6_000, null);
    // A switch the hub made before that renewal but wrote after it still comes out newest.
    await s.saveAgentPath({ ...direct, lastSwitchAt: 5_990, reportedAt: 6_010 });
    expect(await s.pathHistory('ar')).toEqual([
      { at: 6_001, path: 'direct', remote: '198.51.100.7:41641', reason: null, reasonFrom: null },
      { at: 6_000, path: 'relayed', remote: null, reason: 'direct-silent', reasonFrom: 'hub' },
      { at: 5_000, path: 'relayed', remote: null, reason: 'udp-blocked', reasonFrom: 'agent' },
      { at: 4_000, path: 'direct', remote: '198.51.100.7:41641', reason: null, reasonFrom: null },
      { at: 2_000, path: 'relayed', remote: null, reason: '443-only', reasonFrom: 'agent' },
      { at: 1_000, path: 'relayed', remote: null, reason: 'no-candidates', reasonFrom: 'hub' },
    ]);
    // A report gone stale (its replica died): the agent's reason changing then makes no entry.
    await s.saveAgentPath({ ...relayed, lastSwitchAt: 7_000, reportedAt: 7_000 });
    const before = await s.pathHistory('ar');
    await lease(7_000 + PATH_REPORT_STALE_MS, '443-only');
    expect(await s.pathHistory('ar')).toEqual(before);
  });

  it('caps Pending registrations per bootstrap key and in all; accepting frees a place', async () => {
    const small = await backend.open({ maxPendingPerKey: 2, maxPendingRegistrations: 3 });
    const via = (keyId: string) => ({ kind: 'bootstrap' as const, keyId, group: 'default' });
    let n = 20;
    const join = (name: string, keyId: string) =>
      small.register(
        regInput(name, {
          via: via(keyId),
          publicKey: key(n++),
          credential: { id: `a-${name}`, hash: `c-${name}`, expiresAt: null },
        }),
        audit('r'),
      );
    expect((await join('k1-a', 'k1')).ok).toBe(true);
    expect((await join('k1-b', 'k1')).ok).toBe(true);
    expect(await join('k1-c', 'k1')).toEqual({ ok: false, reason: 'pending-cap', scope: 'key', max: 2 });
    expect((await join('k2-a', 'k2')).ok).toBe(true);
    expect(await join('k2-b', 'k2')).toEqual({ ok: false, reason: 'pending-cap', scope: 'relay', max: 3 });
    expect(await small.getCluster('k1-c')).toBeNull();
    // the same agent again (its Pending cluster, its key) is no new cluster
    const again = await small.register(
      regInput('k1-a', {
        via: via('k1'),
        publicKey: key(20),
        credential: { id: 'a2', hash: 'c2', expiresAt: null },
      }),
      audit('r'),
    );
    expect(again.ok).toBe(true);
    // an operator's clusters are not counted and not refused
    await small.createCluster(
      { name: 'op', group: 'default', displayName: 'op', createdAt: 1 },
      secret('p-op'),
      audit('c'),
    );
    await small.setClusterStatus('k1-a', { status: 'Accepted', now: 5, presharedKey: 'pp' }, audit('accept'));
    expect((await join('k1-c', 'k1')).ok).toBe(true);
    expect((await small.listAudit(100)).filter((r) => r.action === 'r')).toHaveLength(5);
    await small.close();
  });

  it('pages clusters by name with a keyset: each once, in byte order, by group and status', async () => {
    const names = ['b-2', 'a', 'b', 'a-1', 'z9', 'm', 'ab', 'a0', 'c-c', 'k'];
    for (const [i, name] of names.entries()) {
      const group = i % 2 === 0 ? 'even' : 'odd';
      await s.createCluster(
        { name, group, displayName: name, createdAt: i },
        secret(`p-${name}`),
        audit('c'),
      );
    }
    await s.setClusterStatus('m', { status: 'Denied', now: 5, presharedKey: 'x' }, audit('deny'));
    const walk = async (query: { group?: string; status?: 'Pending' | 'Denied' }, limit: number) => {
      const seen: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 20; pages++) {
        const page = await s.clusterPage({ ...query, limit, after });
        expect(page.items.length).toBeLessThanOrEqual(limit);
        seen.push(...page.items.map((c) => c.name));
        if (page.next === null) return seen;
        expect(page.next).toBe(page.items.at(-1)!.name);
        after = page.next;
      }
      throw new Error('paging did not end');
    };
    const byteOrder = [...names].sort();
    expect(await walk({}, 3)).toEqual(byteOrder);
    expect(await walk({}, 10)).toEqual(byteOrder);
    expect(await walk({ group: 'odd' }, 2)).toEqual(names.filter((_, i) => i % 2 === 1).sort());
    expect(await walk({ status: 'Denied' }, 2)).toEqual(['m']);
    expect(await walk({ group: 'even', status: 'Pending' }, 4)).toEqual(
      names.filter((n, i) => i % 2 === 0 && n !== 'm').sort(),
    );
    // a cluster added before the cursor is not seen, one after it is; none repeats
    const first = await s.clusterPage({ limit: 4, after: null });
    await s.createCluster(
      { name: 'a00', group: 'x', displayName: 'x', createdAt: 9 },
      secret('p-a00'),
      audit('c'),
    );
    await s.createCluster(
      { name: 'zz', group: 'x', displayName: 'x', createdAt: 9 },
      secret('p-zz'),
      audit('c'),
    );
    const rest = await s.clusterPage({ limit: 100, after: first.next });
    expect([...first.items, ...rest.items].map((c) => c.name)).toEqual([...byteOrder, 'zz']);
    expect(rest.next).toBeNull();
    expect((await s.agentPaths([])).length).toBe(0);
  });

  it('pages access keys in creation order, ties by id', async () => {
    const created = [5, 1, 3, 3, 3, 9, 2, 7, 3, 4];
    for (const [i, createdAt] of created.entries()) {
      await s.createAccessKey(accessKey(`k${i}`, { createdAt }), `h-k${i}`, audit('t'));
    }
    const all = await s.listAccessKeys();
    const seen: string[] = [];
    let after: { createdAt: number; id: string } | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page = await s.accessKeyPage({ limit: 3, after });
      seen.push(...page.items.map((k) => k.id));
      if (page.next === null) break;
      after = page.next;
    }
    expect(seen).toEqual(all.map((k) => k.id));
    expect(new Set(seen).size).toBe(created.length);
  });

  it('pages the audit log newest first, by actor and since', async () => {
    for (let i = 1; i <= 25; i++) {
      await s.appendAudit({
        ...audit('x', String(i)),
        at: i * 10,
        actor: i % 3 === 0 ? 'k_three' : 'k_other',
      });
    }
    const walk = async (query: { since?: number; actor?: string }, limit: number) => {
      const seen: string[] = [];
      let before: number | null = null;
      for (let pages = 0; pages < 30; pages++) {
        const page = await s.auditPage({ ...query, limit, before });
        seen.push(...page.items.map((r) => r.target));
        if (page.next === null) return seen;
        before = page.next;
      }
      throw new Error('paging did not end');
    };
    const newestFirst = Array.from({ length: 25 }, (_, i) => String(25 - i));
    expect(await walk({}, 4)).toEqual(newestFirst);
    expect(await walk({}, 1000)).toEqual(newestFirst);
    expect(await walk({ actor: 'k_three' }, 2)).toEqual(['24', '21', '18', '15', '12', '9', '6', '3']);
    expect(await walk({ since: 200 }, 3)).toEqual(newestFirst.slice(0, 6));
    expect(await walk({ since: 200, actor: 'k_other' }, 3)).toEqual(['25', '23', '22', '20']);
  });

  it('prunes audit rows past the cap only when older than the retention; reports young rows kept', async () => {
    const small = await backend.open({ maxAuditRows: 1000, auditRetentionMs: 500 });
    const kept: number[] = [];
    small.onAuditOverCap((n) => kept.push(n));
    // rows 1-1500 written at time 0, rows 1501-3000 at 1000: at row 3000 the cap reaches rows 1001-2000, and
    // 1501-2000 are younger than 500 ms then
    for (let i = 1; i <= 3000; i++)
      await small.appendAudit({ ...audit('x', String(i)), at: i <= 1500 ? 0 : 1000 });
    const rows: string[] = [];
    let before: number | null = null;
    do {
      const page = await small.auditPage({ limit: 1000, before });
      rows.push(...page.items.map((r) => r.target));
      before = page.next;
    } while (before !== null);
    expect(rows).toHaveLength(1500);
    expect(rows.at(-1)).toBe('1501');
    expect(kept).toEqual([500]);
    await small.close();
  });

  it('counts the agents relayed now by hub reason and agent reason, fresh reports only', async () => {
    const report = (cluster: string, over: Partial<AgentPathRecord> = {}): AgentPathRecord => ({
      cluster,
      path: 'relayed',
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: 3,
      lastSwitchAt: 1_000,
      reason: 'no-candidates',
      reportedAt: 10_000,
      ...over,
    });
    const agents = { a1: '443-only', a2: '443-only', h1: null, h2: null, d1: null, old: '443-only' };
    let n = 10;
    for (const [name, agentReason] of Object.entries(agents)) {
      await s.createCluster(
        { name, group: 'g', displayName: name, createdAt: 1 },
        secret(`p-${name}`),
        audit('c'),
      );
      await s.register(regInput(name, { publicKey: key(n++) }), audit('r'));
      await s.renewLease(name, { now: 1_000, graceMs: 100, agentReason });
    }
    await s.createCluster(
      { name: 'unjoined', group: 'g', displayName: 'u', createdAt: 1 },
      secret('p-u'),
      audit('c'),
    );
    for (const name of ['a1', 'a2', 'h1', 'unjoined']) await s.saveAgentPath(report(name));
    await s.saveAgentPath(report('h2', { reason: 'no-answer' }));
    await s.saveAgentPath(report('d1', { path: 'direct', remote: '198.51.100.7:41641', reason: null }));
    await s.saveAgentPath(report('old', { reportedAt: 9_999 }));
    const counts = await s.relayedReasonCounts(10_000);
    const key2 = (c: RelayedReasonCount) => `${c.hubReason}/${c.agentReason}`;
    expect(counts.sort((a, b) => key2(a).localeCompare(key2(b)))).toEqual([
      { hubReason: 'no-answer', agentReason: null, agents: 1 },
      { hubReason: 'no-candidates', agentReason: '443-only', agents: 2 },
      { hubReason: 'no-candidates', agentReason: null, agents: 1 },
    ]);
    expect(await s.relayedReasonCounts(10_001)).toEqual([]);
  });

  it('access keys, values and audit round-trip; audit is capped', async () => {
    const k = {
      id: 'k1',
      role: 'viewer',
      description: 'd',
      createdAt: 1,
      expiresAt: null,
      revokedAt: null,
      minted: null,
    };
    await s.createAccessKey(k, 'hk1', audit('t'));
    expect(await s.findAccessKey('hk1')).toEqual(k);
    const told: string[] = [];
    const stop = s.onAccessKeyRevoked((id) => told.push(id));
    expect(await s.revokeAccessKey('k1', 5, audit('rv'))).toBe('revoked');
    expect(await s.revokeAccessKey('k1', 6, audit('rv'))).toBe('not-found');
    expect(await s.revokeAccessKey('nope', 6, audit('rv'))).toBe('not-found');
    expect(told).toEqual(['k1']);
    stop();
    expect((await s.findAccessKey('hk1'))?.revokedAt).toBe(5);
    await s.setPlatformValues({ a: { b: 1 } }, audit('v'));
    expect(await s.getPlatformValues()).toEqual({ a: { b: 1 } });
    expect(await s.getClusterValues('none')).toBeNull();
    expect(await s.setClusterValues('none', {}, audit('v'))).toBe(false);
    const capped = await backend.open({ maxAuditRows: 1000, auditRetentionMs: 3_600_000 });
    const hourLater = (i: number) => (i < 1000 ? 0 : 3_600_001);
    for (let i = 0; i < 2500; i++) await capped.appendAudit({ ...audit('x', String(i)), at: hourLater(i) });
    const rows = await capped.listAudit(5000);
    expect(rows.length).toBeLessThanOrEqual(1500);
    expect(rows[0]!.target).toBe('2499');
    await capped.close();
  });

  it('refuses to revoke the last active admin key; expired and revoked admins do not count', async () => {
    const admin = (id: string, expiresAt: number | null) => ({
      id,
      role: 'admin',
      description: '',
      createdAt: 1,
      expiresAt,
      revokedAt: null,
      minted: null,
    });
    await s.createAccessKey(admin('a1', null), 'ha1', audit('t'));
    await s.createAccessKey(admin('a2', 100), 'ha2', audit('t'));
    expect(await s.revokeAccessKey('a1', 50, audit('rv'))).toBe('revoked');
    expect(await s.revokeAccessKey('a2', 60, audit('rv'))).toBe('last-admin');
    await s.createAccessKey(admin('a3', null), 'ha3', audit('t'));
    // at 200 a2 has expired: a3 is the last active admin, and a2 (inactive already) may be revoked
    expect(await s.revokeAccessKey('a3', 200, audit('rv'))).toBe('last-admin');
    expect(await s.revokeAccessKey('a2', 200, audit('rv'))).toBe('revoked');
    expect((await s.listAudit(100)).filter((r) => r.action === 'rv')).toHaveLength(2);
  });

  it('caps live access keys only; the recovery key is exempt; ended keys go after the retention', async () => {
    const small = await backend.open({ maxAccessKeys: 3 });
    const keyAt = (id: string, createdAt: number, expiresAt: number | null) =>
      small.createAccessKey(accessKey(id, { createdAt, expiresAt }), `h-${id}`, audit('t'));
    // Three keys that expire at 100: a flood of short keys, as kubeconfigs with a 1 s ttl leave behind.
    for (const id of ['e1', 'e2', 'e3']) await keyAt(id, 1, 100);
    await expect(keyAt('refused', 50, null)).rejects.toSatisfy(
      (e) => isTunnelError(e, 'LIMIT_EXCEEDED') && /3 live/.test(String(e)),
    );
    // Once they expired they no longer count.
    for (const id of ['l1', 'l2', 'l3']) await keyAt(id, 200, null);
    await expect(keyAt('l4', 201, null)).rejects.toSatisfy((e) => isTunnelError(e, 'LIMIT_EXCEEDED'));
    // The offline recovery is never refused; a revoked key frees its place.
    await small.createAccessKey(accessKey('rescue', { createdAt: 202 }), 'h-rescue', audit('t'), {
      cap: 'exempt',
    });
    expect(await small.revokeAccessKey('l1', 300, audit('rv'))).toBe('revoked');
    await expect(keyAt('l4', 301, null)).rejects.toSatisfy((e) => isTunnelError(e, 'LIMIT_EXCEEDED'));
    expect(await small.revokeAccessKey('l2', 302, audit('rv'))).toBe('revoked');
    await keyAt('l5', 303, null);
    const ids = async () => (await small.listAccessKeys()).map((k) => k.id).sort();
    expect(await ids()).toEqual(['e1', 'e2', 'e3', 'l1', 'l2', 'l3', 'l5', 'rescue']);
    expect(await small.revokeAccessKey('l3', 400, audit('rv'))).toBe('revoked');
    // Ended keys stay listed until ENDED_KEY_RETENTION_MS after they ended; the next creation deletes them.
    const retained = 100 + ENDED_KEY_RETENTION_MS;
    await keyAt('n1', retained - 1, retained);
    expect(await ids()).toEqual(['e1', 'e2', 'e3', 'l1', 'l2', 'l3', 'l5', 'n1', 'rescue']);
    await keyAt('n2', retained, retained + 1);
    expect(await ids()).toEqual(['l1', 'l2', 'l3', 'l5', 'n1', 'n2', 'rescue']);
    await keyAt('n3', 302 + ENDED_KEY_RETENTION_MS, 303 + ENDED_KEY_RETENTION_MS);
    expect(await ids()).toEqual(['l3', 'l5', 'n1', 'n2', 'n3', 'rescue']);
    await small.close();
  });

  it('keeps at most maxEndedAccessKeys ended keys, the ones that ended first going first', async () => {
    const small = await backend.open({ maxEndedAccessKeys: 1 });
    await small.createAccessKey(accessKey('kB', { createdAt: 100, expiresAt: 300 }), 'hB', audit('t'));
    // Created after kB and expiring after it, but revoked before kB expired: kA ended first.
    await small.createAccessKey(accessKey('kA', { createdAt: 150, expiresAt: 5_000 }), 'hA', audit('t'));
    expect(await small.revokeAccessKey('kA', 200, audit('rv'))).toBe('revoked');
    await small.createAccessKey(accessKey('kC', { createdAt: 400 }), 'hC', audit('t'));
    expect((await small.listAccessKeys()).map((k) => k.id)).toEqual(['kB', 'kC']);
    await small.createAccessKey(accessKey('kD', { createdAt: 500 }), 'hD', audit('t'));
    expect((await small.listAccessKeys()).map((k) => k.id)).toEqual(['kB', 'kC', 'kD']);
    await small.close();
  });

  it('caps the live kubeconfig keys of each minting key', async () => {
    const small = await backend.open({ maxLiveKeysPerMinter: 2 });
    const mint = (id: string, by: string, createdAt = 10, expiresAt: number | null = 1_000) =>
      small.createAccessKey(
        accessKey(id, {
          role: 'cluster-proxy-read:edge',
          createdAt,
          expiresAt,
          minted: { by, clusterCreatedAt: 1 },
        }),
        `h-${id}`,
        audit('t'),
      );
    await mint('a1', 'k_a');
    await mint('a2', 'k_a', 10, 500);
    await expect(mint('a3', 'k_a')).rejects.toSatisfy(
      (e) => isTunnelError(e, 'LIMIT_EXCEEDED') && /k_a already holds 2 live/.test(String(e)),
    );
    await mint('b1', 'k_b');
    // a2 expired at 500: k_a has one live kubeconfig key again.
    await mint('a3', 'k_a', 600);
    expect((await small.findAccessKey('h-a3'))?.minted).toEqual({ by: 'k_a', clusterCreatedAt: 1 });
    // The minter's role is kept: the group its caller is impersonated in (relay/data/proxy/caller-identity.ts).
    await small.createAccessKey(
      accessKey('c1', {
        role: 'cluster-proxy:edge',
        minted: { by: 'k_c', clusterCreatedAt: 1, role: 'admin' },
      }),
      'h-c1',
      audit('t'),
    );
    expect((await small.findAccessKey('h-c1'))?.minted).toEqual({
      by: 'k_c',
      clusterCreatedAt: 1,
      role: 'admin',
    });
    await small.close();
  });

  it("deleting a cluster revokes its kubeconfig keys and ends its install links, no other cluster's", async () => {
    await s.createCluster(
      { name: 'edge', group: 'default', displayName: 'e', createdAt: 1 },
      { ...secret('p-edge'), install: { hash: 'link-edge', sealed: 'sealed' } },
      audit('c'),
    );
    const scoped = (id: string, role: string, expiresAt: number | null = null) =>
      s.createAccessKey(
        accessKey(id, { role, expiresAt, minted: { by: 'k_admin', clusterCreatedAt: 1 } }),
        `h-${id}`,
        audit('t'),
      );
    await scoped('rw', 'cluster-proxy:edge');
    await scoped('ro', 'cluster-proxy-read:edge');
    await scoped('gone', 'cluster-proxy:edge', 20);
    await scoped('other', 'cluster-proxy:edge-2');
    await s.createAccessKey(accessKey('viewer', {}), 'h-viewer', audit('t'));
    const told: string[] = [];
    const stop = s.onAccessKeyRevoked((id) => told.push(id));
    expect((await s.deleteCluster('edge', { ...audit('d', 'edge'), at: 50 }))?.name).toBe('edge');
    stop();
    expect(told.sort()).toEqual(['ro', 'rw']);
    const revokedAt = async (id: string) => (await s.findAccessKey(`h-${id}`))?.revokedAt;
    expect([await revokedAt('rw'), await revokedAt('ro')]).toEqual([50, 50]);
    expect([await revokedAt('gone'), await revokedAt('other'), await revokedAt('viewer')]).toEqual([
      null,
      null,
      null,
    ]);
    expect(await s.takeInstallLink('link-edge', 60, audit('i'))).toEqual({ ok: false, reason: 'unknown' });
  });

  it('initMeta sets once; closed stores reject with CLOSED', async () => {
    expect(await s.initMeta('m', '1')).toBe(true);
    expect(await s.initMeta('m', '2')).toBe(false);
    expect(await s.getMeta('m')).toBe('1');
    await s.close();
    await expect(s.ping()).rejects.toSatisfy((e) => isTunnelError(e, 'CLOSED'));
  });
});

describe('SqliteStore on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'relay-store-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps state across reopen and does not re-run migrations', async () => {
    const path = join(dir, 'relay.db');
    const a = new SqliteStore(path);
    await a.createCluster(
      { name: 'keep', group: 'default', displayName: 'k', createdAt: 1 },
      secret('p'),
      audit('c'),
    );
    await a.close();
    const b = new SqliteStore(path);
    expect((await b.getCluster('keep'))?.name).toBe('keep');
    await b.close();
  });

  it('migrates a version-6 database: its clusters read with no agent reason, renewals store one', async () => {
    const path = join(dir, 'v6.db');
    const db = new Database(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT)');
    MIGRATIONS.slice(0, 6).forEach((sql, i) => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(i + 1);
    });
    db.prepare(
      `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, public_key, claims)
         VALUES ('old', 'default', 'old', 'Accepted', 1, 1, ?, '{}')`,
    ).run(key(7));
    db.close();
    const s7 = new SqliteStore(path);
    expect(await s7.getCluster('old')).toMatchObject({ name: 'old', agentReason: null });
    expect(await s7.renewLease('old', { now: 5, graceMs: 100, agentReason: 'udp-blocked' })).toBe(true);
    expect((await s7.getCluster('old'))?.agentReason).toBe('udp-blocked');
    await s7.close();
  });

  it("migrates a version-7 database: its history's reasons read as the hub's, new entries say who", async () => {
    const path = join(dir, 'v7.db');
    const db = new Database(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT)');
    MIGRATIONS.slice(0, 7).forEach((sql, i) => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(i + 1);
    });
    db.prepare(
      `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, public_key, claims, agent_reason)
         VALUES ('old', 'default', 'old', 'Accepted', 1, 1, ?, '{}', '443-only')`,
    ).run(key(8));
    db.prepare(
      `INSERT INTO agent_path_history (cluster, at, path, remote, reason) VALUES
         ('old', 1000, 'direct', '198.51.100.7:41641', NULL), ('old', 2000, 'relayed', NULL, 'no-answer')`,
    ).run();
    db.close();
    const s8 = new SqliteStore(path);
    expect(await s8.pathHistory('old')).toEqual([
      { at: 2_000, path: 'relayed', remote: null, reason: 'no-answer', reasonFrom: 'hub' },
      { at: 1_000, path: 'direct', remote: '198.51.100.7:41641', reason: null, reasonFrom: null },
    ]);
    await s8.saveAgentPath({
      cluster: 'old',
      path: 'relayed',
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: 3,
      lastSwitchAt: 3_000,
      reason: 'no-candidates',
      reportedAt: 3_000,
    });
    expect((await s8.pathHistory('old'))[0]).toEqual({
      at: 3_000,
      path: 'relayed',
      remote: null,
      reason: '443-only',
      reasonFrom: 'agent',
    });
    await s8.close();
  });
  it('migrates a version-9 database: kubeconfig keys are tied to their cluster, those of a gone one deleted', async () => {
    const path = join(dir, 'v9.db');
    const db = new Database(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT)');
    MIGRATIONS.slice(0, 9).forEach((sql, i) => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(i + 1);
    });
    // edge was created at 10; edge-new at 50, after a key for an earlier edge-new was minted (deleted, created again).
    const cluster = db.prepare(
      `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, claims)
         VALUES (?, 'default', ?, 'Pending', ?, ?, '{}')`,
    );
    cluster.run('edge', 'edge', 10, 10);
    cluster.run('edge-new', 'edge-new', 50, 50);
    const insertKey = db.prepare(
      `INSERT INTO access_keys (id, role, description, hash, created_at, expires_at, revoked_at)
         VALUES (?, ?, '', ?, ?, NULL, NULL)`,
    );
    insertKey.run('rw', 'cluster-proxy:edge', 'h-rw', 20);
    insertKey.run('ro', 'cluster-proxy-read:edge', 'h-ro', 30);
    insertKey.run('stale', 'cluster-proxy:edge-new', 'h-stale', 40);
    insertKey.run('orphan', 'cluster-proxy-read:deleted', 'h-orphan', 40);
    insertKey.run('admin', 'admin', 'h-admin', 1);
    db.close();
    const s10 = new SqliteStore(path);
    expect((await s10.listAccessKeys()).map((k) => [k.id, k.minted])).toEqual([
      ['admin', null],
      ['rw', { by: null, clusterCreatedAt: 10 }],
      ['ro', { by: null, clusterCreatedAt: 10 }],
    ]);
    // The tied keys end with their cluster.
    const told: string[] = [];
    s10.onAccessKeyRevoked((id) => told.push(id));
    await s10.deleteCluster('edge', { ...audit('d', 'edge'), at: 60 });
    expect(told.sort()).toEqual(['ro', 'rw']);
    await s10.close();
  });
});
