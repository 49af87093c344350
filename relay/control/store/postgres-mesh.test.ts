/**
 * The replica mesh's tables on a real PostgreSQL (test/helpers/postgres.ts), seen from two store instances as two
 * replicas see them: the fleet identity is first-writer-wins, a replica without a fresh heartbeat (database clock)
 * drops out and its locations with it, the latest location wins and only its writer clears it, a draining agent
 * is left out of locate, the replica cap.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { PostgresBackend } from '../../../test/helpers/store-backends.js';
import { PostgresStore } from './postgres.js';
import { MAX_REPLICAS, type PgMeshTables } from './postgres-mesh.js';

const backend = new PostgresBackend();
beforeAll(() => backend.start(), 120_000);
afterAll(() => backend.stop());

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function twoReplicas(): Promise<[PostgresStore, PgMeshTables, PgMeshTables]> {
  const connection = await backend.newDatabase();
  const [a, b] = await Promise.all([PostgresStore.open({ connection }), PostgresStore.open({ connection })]);
  opened.push(a!, b!);
  return [a!, a!.meshTables(), b!.meshTables()];
}

async function cluster(store: PostgresStore, name: string): Promise<void> {
  const audit = { at: 1, actor: 'k', action: 'c', target: name, source: 'l', detail: {} };
  await store.createCluster(
    { name, group: 'default', displayName: name, createdAt: 1 },
    { id: `p-${name}`, hash: `h-${name}`, expiresAt: 10_000 },
    audit,
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PgMeshTables', () => {
  it('keeps the first fleet identity; later claims read it back unchanged', async () => {
    const [, a, b] = await twoReplicas();
    const first = { hubPublicKey: 'A'.repeat(43) + '=', caPin: `sha256:${'a'.repeat(64)}` };
    const claims = await Promise.all([
      a.claimFleet(first),
      b.claimFleet({ hubPublicKey: 'B'.repeat(43) + '=', caPin: `sha256:${'b'.repeat(64)}` }),
    ]);
    expect(claims[0]).toEqual(claims[1]);
    expect(await a.claimFleet({ hubPublicKey: 'C', caPin: 'none' })).toEqual(claims[0]);
  });

  it('a replica without a heartbeat within dead-after drops out, with the locations it held', async () => {
    const [store, a, b] = await twoReplicas();
    await cluster(store, 'edge-1');
    await a.join({ id: 'ra', meshUrl: 'https://10.0.0.1:8443', mode: 'hub' }, 400);
    await b.join({ id: 'rb', meshUrl: 'https://10.0.0.2:8443', mode: 'hub' }, 400);
    await a.setLocation({ cluster: 'edge-1', publicKey: 'k-edge-1', replica: 'ra', path: 'relayed' });
    expect((await b.locate('edge-1', 400))[0]).toMatchObject({
      replica: 'ra',
      meshUrl: 'https://10.0.0.1:8443',
    });
    expect((await b.remoteLocations('rb', 400)).map((l) => l.cluster)).toEqual(['edge-1']);
    expect(await a.remoteLocations('ra', 400)).toEqual([]);
    await sleep(700);
    expect(await b.heartbeat('rb')).toBe(true);
    expect((await b.liveReplicas(400)).map((r) => r.id)).toEqual(['rb']);
    expect(await b.locate('edge-1', 400)).toEqual([]);
    // A longer dead-after still counts it.
    expect((await b.locate('edge-1', 60_000))[0]).toMatchObject({ replica: 'ra' });
  });

  it('the latest location wins; a replica clears a location only while it still holds it', async () => {
    const [store, a, b] = await twoReplicas();
    await cluster(store, 'edge-2');
    await a.join({ id: 'ra', meshUrl: 'https://a:1', mode: 'hub' }, 5_000);
    await b.join({ id: 'rb', meshUrl: 'https://b:1', mode: 'hub' }, 5_000);
    await a.setLocation({ cluster: 'edge-2', publicKey: 'k-edge-2', replica: 'ra', path: 'relayed' });
    await b.setLocation({ cluster: 'edge-2', publicKey: 'k-edge-2', replica: 'rb', path: 'direct' });
    await a.clearLocation('k-edge-2', 'ra');
    expect((await a.locate('edge-2', 5_000))[0]).toMatchObject({ replica: 'rb', path: 'direct' });
    await b.clearLocation('k-edge-2', 'rb');
    expect(await a.locate('edge-2', 5_000)).toEqual([]);
    // Unknown clusters are not recorded; a deleted cluster takes its location with it.
    await a.setLocation({
      cluster: 'no-such-cluster',
      publicKey: 'k-no-such-cluster',
      replica: 'ra',
      path: 'relayed',
    });
    expect(await b.locate('no-such-cluster', 5_000)).toEqual([]);
    await a.setLocation({ cluster: 'edge-2', publicKey: 'k-edge-2', replica: 'ra', path: 'relayed' });
    await store.deleteCluster('edge-2', {
      at: 2,
      actor: 'k',
      action: 'd',
      target: 'edge-2',
      source: 'l',
      detail: {},
    });
    expect(await b.locate('edge-2', 5_000)).toEqual([]);
  });

  it("one cluster's agents on different replicas each have their own location", async () => {
    const [store, a, b] = await twoReplicas();
    await cluster(store, 'edge-4');
    await a.join({ id: 'ra', meshUrl: 'https://a:1', mode: 'hub' }, 5_000);
    await b.join({ id: 'rb', meshUrl: 'https://b:1', mode: 'hub' }, 5_000);
    await a.setLocation({ cluster: 'edge-4', publicKey: 'k1', replica: 'ra', path: 'relayed' });
    await b.setLocation({ cluster: 'edge-4', publicKey: 'k2', replica: 'rb', path: 'direct' });
    const both = await a.locate('edge-4', 5_000);
    expect(both.map((l) => [l.publicKey, l.replica, l.path])).toEqual([
      ['k1', 'ra', 'relayed'],
      ['k2', 'rb', 'direct'],
    ]);
    expect((await a.remoteLocations('ra', 5_000)).map((l) => l.publicKey)).toEqual(['k2']);
    // Clearing one agent leaves the other's.
    await a.clearLocation('k1', 'ra');
    expect((await b.locate('edge-4', 5_000)).map((l) => l.publicKey)).toEqual(['k2']);
  });

  it('a draining agent is left out of locate until its next run, and still counted as a session', async () => {
    const [store, a, b] = await twoReplicas();
    await cluster(store, 'edge-5');
    await a.join({ id: 'ra', meshUrl: 'https://a:1', mode: 'hub' }, 5_000);
    await b.join({ id: 'rb', meshUrl: 'https://b:1', mode: 'hub' }, 5_000);
    await a.setLocation({ cluster: 'edge-5', publicKey: 'k1', replica: 'ra', path: 'relayed' });
    await b.setLocation({ cluster: 'edge-5', publicKey: 'k2', replica: 'rb', path: 'relayed' });
    await a.markDraining({ publicKey: 'k1', replica: 'ra', draining: true });
    expect((await b.locate('edge-5', 5_000)).map((l) => l.publicKey)).toEqual(['k2']);
    expect((await b.remoteLocations('rb', 5_000)).map((l) => l.publicKey)).toEqual(['k1']);
    // Only the replica holding the session marks it: another one's mark changes nothing.
    await b.markDraining({ publicKey: 'k2', replica: 'ra', draining: true });
    expect((await a.locate('edge-5', 5_000)).map((l) => l.publicKey)).toEqual(['k2']);
    // A path change on the same replica keeps the mark; the session moving to another replica drops it.
    await a.setLocation({ cluster: 'edge-5', publicKey: 'k1', replica: 'ra', path: 'direct' });
    expect((await b.locate('edge-5', 5_000)).map((l) => l.publicKey)).toEqual(['k2']);
    await b.setLocation({ cluster: 'edge-5', publicKey: 'k1', replica: 'rb', path: 'relayed' });
    expect((await a.locate('edge-5', 5_000)).map((l) => l.publicKey).sort()).toEqual(['k1', 'k2']);
    // Its next run on the same replica takes streams again.
    await b.markDraining({ publicKey: 'k2', replica: 'rb', draining: true });
    expect((await a.locate('edge-5', 5_000)).map((l) => l.publicKey)).toEqual(['k1']);
    await b.markDraining({ publicKey: 'k2', replica: 'rb', draining: false });
    expect((await a.locate('edge-5', 5_000)).map((l) => l.publicKey).sort()).toEqual(['k1', 'k2']);
  });

  it('leave removes the row and its locations; the replica cap refuses one more', async () => {
    const [store, a, b] = await twoReplicas();
    await cluster(store, 'edge-3');
    await a.join({ id: 'ra', meshUrl: 'https://a:1', mode: 'hub' }, 5_000);
    await a.setLocation({ cluster: 'edge-3', publicKey: 'k-edge-3', replica: 'ra', path: 'relayed' });
    await a.leave('ra');
    expect(await b.locate('edge-3', 5_000)).toEqual([]);
    expect(await a.heartbeat('ra')).toBe(false);
    for (let i = 0; i < MAX_REPLICAS; i++)
      await b.join({ id: `r${i}`, meshUrl: 'https://x:1', mode: 'hub' }, 5_000);
    const err = await a.join({ id: 'one-more', meshUrl: 'https://x:1', mode: 'hub' }, 5_000).catch((e) => e);
    expect(isTunnelError(err, 'LIMIT_EXCEEDED')).toBe(true);
  });
});
