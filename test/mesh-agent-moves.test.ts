/**
 * An agent that moves between replicas: two `tunnel-relay serve` replicas (A, B) of one fleet on a throw-away
 * PostgreSQL, both with the public URL of a TCP forwarder standing in for the balancer. The agent joins and connects
 * through it to A; then the forwarder cuts every connection and sends new ones to B, so the agent reconnects to B.
 * Its location in the store follows it (the latest session wins), and a request that reaches A is forwarded one hop
 * to B within seconds.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './helpers/postgres.js';
import { type FleetFiles, fleetServeArgs, writeFleetFiles } from './helpers/relay-fleet.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

const CLUSTER = 'edge-moves';
let server: ThrowawayPostgres;
let fleet: FleetFiles;
let dir: string;
let a: { proc: Proc; ready: ReadyLine };
let b: { proc: Proc; ready: ReadyLine };
let adminKey: string;
let upstream: http.Server;
let agent: Proc;

/** A TCP forwarder to one replica at a time; `switchTo` cuts every connection it carries. */
class Forwarder {
  readonly server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  targetPort = 0;

  constructor() {
    this.server = net.createServer((client) => {
      const up = net.connect(this.targetPort, '127.0.0.1');
      for (const s of [client, up]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(up).pipe(client);
    });
  }

  switchTo(port: number): void {
    this.targetPort = port;
    for (const s of this.#sockets) s.destroy();
  }
}

const forwarder = new Forwarder();
const portOf = (url: string) => Number(new URL(url).port);

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('mesh-moves-');
  server = await startThrowawayPostgres();
  const db = await server.createDatabase('relay');
  const passwordFile = join(dir, 'pg-password');
  writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
  const store = {
    url: `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`,
    passwordFile,
  };
  fleet = writeFleetFiles(dir);
  writeFileSync(join(dir, 'ca.pem'), fleet.caPem);
  upstream = http.createServer(sampleHandler('moved-upstream'));
  const upstreamPort = await listen(upstream);
  forwarder.server.listen(0, '127.0.0.1');
  await new Promise((r) => forwarder.server.once('listening', r));
  const publicUrl = `https://127.0.0.1:${(forwarder.server.address() as net.AddressInfo).port}`;
  const replica = () =>
    startServe(tempDir('mesh-moves-replica-'), '127.0.0.1:0', [
      ...fleetServeArgs(fleet, store),
      '--public-url',
      publicUrl,
    ]);
  a = await replica();
  b = await replica();
  adminKey = a.ready.adminKey ?? '';
  forwarder.switchTo(portOf(a.ready.url));
  const admin = adminEnvOf({ ...a.ready, adminKey });
  const created = await run(RELAY_BIN, ['cluster', 'create', CLUSTER, '--output', 'json'], admin);
  expect(created.code, created.stderr).toBe(0);
  const stateDir = join(tempDir('mesh-moves-agent-'), 'state');
  const joined = await run(
    CLIENT_BIN,
    [
      'join',
      '--relay',
      publicUrl,
      '--cluster',
      CLUSTER,
      '--psk',
      JSON.parse(created.stdout).bootstrap.psk,
      '--ca-pin',
      fleet.caPin,
      '--state-dir',
      stateDir,
      '--upstream',
      `http://127.0.0.1:${upstreamPort}`,
      '--wait',
    ],
    cleanEnv(),
    40_000,
  );
  expect(joined.code, joined.stderr).toBe(0);
  agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  await waitConnected(admin, CLUSTER, 20_000);
}, 180_000);

afterAll(async () => {
  await agent?.stop('SIGTERM');
  for (const r of [a, b]) await r?.proc.stop();
  forwarder.server.close();
  upstream?.close();
  await cleanup();
  await server?.stop();
  await cleanupAll();
});

const viaPathProxy = (url: string) =>
  curl([
    '-sS',
    '--max-time',
    '5',
    '--cacert',
    join(dir, 'ca.pem'),
    '-H',
    `Authorization: Bearer ${adminKey}`,
    `${url}/api/v1/clusters/${CLUSTER}/proxy/hello`,
  ]);

describe('an agent that reconnects to another replica', () => {
  it('is reached through the replica it left, within seconds of the move', async () => {
    expect((await viaPathProxy(a.ready.url)).stdout).toBe('hello from moved-upstream');
    forwarder.switchTo(portOf(b.ready.url));
    const moved = Date.now();
    // Once B has recorded the agent's new session, a request reaching A goes one hop to B.
    await vi.waitFor(
      async () => {
        const r = await viaPathProxy(a.ready.url);
        expect(r.stdout).toBe('hello from moved-upstream');
      },
      { timeout: 12_000, interval: 250 },
    );
    expect(Date.now() - moved).toBeLessThan(12_000);
    expect((await viaPathProxy(b.ready.url)).stdout).toBe('hello from moved-upstream');
  }, 40_000);
});
