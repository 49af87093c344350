/**
 * The events feed of two real `tunnel-relay serve` replicas sharing one throw-away PostgreSQL: a stream open on
 * one replica sees clusters created and deleted through the other (the feed's reconcile, within 5 s, and
 * LISTEN/NOTIFY) and the other's agent sessions coming up and going (the mesh's agent locations), and a key revoked
 * through the other ends its stream within about a second.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { api, EventCurl } from './events-fixture.js';
import { cleanupAll } from './helpers/cleanup.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './helpers/postgres.js';
import { type FleetFiles, fleetServeArgs, writeFleetFiles } from './helpers/relay-fleet.js';

interface Replica {
  proc: Proc;
  ready: ReadyLine;
  caFile: string;
}

let server: ThrowawayPostgres;
let storeUrl: string;
let passwordFile: string;
const replicas: Replica[] = [];
let adminKey: string;
let fleet: FleetFiles;

/** Every replica serves the fleet's one certificate and hub key (test/helpers/relay-fleet.ts). */
async function startReplica(): Promise<Replica> {
  const { proc, ready } = await startServe(
    tempDir('events-replica-'),
    '127.0.0.1:0',
    fleetServeArgs(fleet, { url: storeUrl, passwordFile }),
  );
  return { proc, ready, caFile: fleet.tlsCert };
}

const call = (r: Replica, method: string, path: string, body?: unknown, key = adminKey) =>
  api({ url: r.ready.url, key, caFile: r.caFile }, method, path, body);

beforeAll(async () => {
  buildIfStale();
  server = await startThrowawayPostgres();
  const db = await server.createDatabase('relay');
  storeUrl = `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`;
  passwordFile = join(tempDir('events-replica-secret-'), 'password');
  writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
  fleet = writeFleetFiles(tempDir('events-replica-fleet-'));
  replicas.push(await startReplica());
  replicas.push(await startReplica());
  adminKey = replicas[0]!.ready.adminKey ?? '';
}, 180_000);

afterAll(async () => {
  for (const r of replicas) await r.proc.stop();
  await cleanup();
  await server?.stop();
  await cleanupAll();
});

describe('events feed on two PostgreSQL replicas', () => {
  it("shows the other replica's creates and deletes, and ends a stream whose key it revoked", async () => {
    const [a, b] = [replicas[0]!, replicas[1]!];
    const stream = new EventCurl({ url: b.ready.url, key: adminKey, caFile: b.caFile });
    const viewer = await call(a, 'POST', '/api/v1/tokens', { role: 'viewer' });
    const watcher = new EventCurl({ url: b.ready.url, key: String(viewer.body.token), caFile: b.caFile });
    try {
      await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready on b');
      await watcher.waitFor((e) => e.event === 'ready', 15_000, 'viewer ready on b');
      const createdAt = Date.now();
      expect((await call(a, 'POST', '/api/v1/clusters', { name: 'from-a' })).status).toBe(201);
      const seen = await stream.waitFor((e) => e.data.includes('"name":"from-a"'), 10_000, 'from-a on b');
      console.log(`events replicas: a create on a reached b's stream in ${seen.at - createdAt} ms`);
      expect(JSON.parse(seen.data)).toEqual((await call(b, 'GET', '/api/v1/clusters/from-a')).body);

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
    const stream = new EventCurl({ url: b.ready.url, key: adminKey, caFile: b.caFile });
    const created = await call(a, 'POST', '/api/v1/clusters', { name: 'via-a' });
    const psk = String((created.body.bootstrap as { psk: string }).psk);
    const stateDir = join(tempDir('events-replica-agent-'), 'state');
    const joinArgs = ['--relay', a.ready.url, '--cluster', 'via-a', '--psk', psk, '--ca-pin', fleet.caPin];
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
