/**
 * The events feed of two real `tunnel-relay serve` replicas sharing one throw-away PostgreSQL: a stream open on
 * one replica sees clusters created and deleted through the other (the feed's reconcile, within 5 s, and
 * LISTEN/NOTIFY) and the other's agent sessions coming up and going (the mesh's agent locations), and a key revoked
 * through the other ends its stream within about a second.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, CLIENT_BIN, cleanEnv, cleanup, Proc, run, tempDir } from './cli-harness.js';
import { api, EventCurl } from './events-fixture.js';
import { cleanupAll } from './helpers/cleanup.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';

/** Every replica serves the fleet's one certificate and hub key (test/helpers/replica-fleet.ts). */
let fleet: ReplicaFleet;
let replicas: Replica[];
let adminKey: string;

const call = (r: Replica, method: string, path: string, body?: unknown, key = adminKey) =>
  api({ url: r.ready.url, key, caFile: fleet.files.tlsCert }, method, path, body);

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('events-replica');
  await fleet.startReplica();
  await fleet.startReplica();
  replicas = fleet.replicas;
  adminKey = fleet.adminKey();
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
  await cleanup();
  await cleanupAll();
});

describe('events feed on two PostgreSQL replicas', () => {
  it("shows the other replica's creates and deletes, and ends a stream whose key it revoked", async () => {
    const [a, b] = [replicas[0]!, replicas[1]!];
    const stream = new EventCurl({ url: b.ready.url, key: adminKey, caFile: fleet.files.tlsCert });
    const viewer = await call(a, 'POST', '/api/v1/tokens', { role: 'viewer' });
    const watcher = new EventCurl({
      url: b.ready.url,
      key: String(viewer.body.token),
      caFile: fleet.files.tlsCert,
    });
    try {
      await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready on b');
      await watcher.waitFor((e) => e.event === 'ready', 15_000, 'viewer ready on b');
      const createdAt = Date.now();
      expect((await call(a, 'POST', '/api/v1/clusters', { name: 'from-a' })).status).toBe(201);
      const seen = await stream.waitFor((e) => e.data.includes('"name":"from-a"'), 10_000, 'from-a on b');
      console.log(`events replicas: a create on a reached b's stream in ${seen.at - createdAt} ms`);
      // The feed carries what GET /api/v1/clusters/NAME does, but for `impersonation` and the `agents` list (that
      // route's alone; the feed has the agent counts).
      const { impersonation, agents, ...got } = (await call(b, 'GET', '/api/v1/clusters/from-a')).body;
      expect(impersonation).toBe('on');
      expect(agents).toEqual([]);
      expect(JSON.parse(seen.data)).toEqual(got);

      expect((await call(a, 'DELETE', '/api/v1/clusters/from-a')).status).toBe(200);
      await stream.waitFor((e) => e.event === 'cluster-deleted', 10_000, 'from-a deleted on b');

      const revokedAt = Date.now();
      expect((await call(a, 'DELETE', `/api/v1/tokens/${String(viewer.body.id)}`)).status).toBe(200);
      await watcher.exited;
      console.log(
        `events replicas: a key revoked on a ended its stream on b in ${Date.now() - revokedAt} ms`,
      );
      expect(Date.now() - revokedAt).toBeLessThan(2_000);
      expect(watcher.events.at(-1)?.event).toBe('end');
    } finally {
      stream.stop();
      watcher.stop();
    }
  }, 120_000);

  it("shows an agent's session on the other replica coming up and going (the mesh's locations)", async () => {
    const [a, b] = [replicas[0]!, replicas[1]!];
    const stream = new EventCurl({ url: b.ready.url, key: adminKey, caFile: fleet.files.tlsCert });
    const created = await call(a, 'POST', '/api/v1/clusters', { name: 'via-a' });
    const psk = String((created.body.bootstrap as { psk: string }).psk);
    const stateDir = join(tempDir('events-replica-agent-'), 'state');
    const joinArgs = [
      '--relay',
      a.ready.url,
      '--cluster',
      'via-a',
      '--psk',
      psk,
      '--ca-pin',
      fleet.files.caPin,
    ];
    const joined = await run(
      CLIENT_BIN,
      ['join', ...joinArgs, '--state-dir', stateDir, '--wait'],
      cleanEnv(),
      40_000,
    );
    expect(joined.code, joined.stderr).toBe(0);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    try {
      await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready on b');
      const isVia = (e: { data: string }) => e.data.includes('"name":"via-a"');
      await stream.waitFor(
        (e) => isVia(e) && e.data.includes('"connected":true'),
        30_000,
        'via-a connected on b',
      );
      const from = stream.events.length;
      await agent.stop('SIGKILL');
      await stream.waitFor(
        (e) => isVia(e) && e.data.includes('"connected":false'),
        40_000,
        'via-a disconnected on b',
        from,
      );
    } finally {
      await agent.stop('SIGKILL');
      stream.stop();
    }
  }, 150_000);
});
