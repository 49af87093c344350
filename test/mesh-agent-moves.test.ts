/**
 * An agent that moves between replicas: two `tunnel-relay serve` replicas (A, B) of one fleet on a throw-away
 * PostgreSQL, both with the public URL of a TCP forwarder standing in for the balancer. The agent joins and connects
 * through it to A; then the forwarder cuts every connection and sends new ones to B, so the agent reconnects to B.
 * Its location in the store follows it (the latest session wins), and a request that reaches A is forwarded one hop
 * to B within seconds.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  run,
  waitConnected,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { startJoinedAgent } from './helpers/joined-agent.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

const CLUSTER = 'edge-moves';
let fleet: ReplicaFleet;
let a: Replica;
let b: Replica;
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
  fleet = await startReplicaFleet('mesh-moves');
  upstream = http.createServer(sampleHandler('moved-upstream'));
  const upstreamPort = await listen(upstream);
  forwarder.server.listen(0, '127.0.0.1');
  await new Promise((r) => forwarder.server.once('listening', r));
  const publicUrl = `https://127.0.0.1:${(forwarder.server.address() as net.AddressInfo).port}`;
  const replica = () => fleet.startReplica({ extraArgs: ['--public-url', publicUrl] });
  a = await replica();
  b = await replica();
  adminKey = fleet.adminKey();
  forwarder.switchTo(portOf(a.ready.url));
  const admin = adminEnvOf({ ...a.ready, adminKey });
  const created = await run(RELAY_BIN, ['cluster', 'create', CLUSTER, '--output', 'json'], admin);
  expect(created.code, created.stderr).toBe(0);
  agent = await startJoinedAgent({
    relayUrl: publicUrl,
    cluster: CLUSTER,
    psk: JSON.parse(created.stdout).bootstrap.psk,
    caPin: fleet.files.caPin,
    upstream: `http://127.0.0.1:${upstreamPort}`,
    prefix: 'mesh-moves-agent',
  });
  await waitConnected(admin, CLUSTER, 20_000);
}, 180_000);

afterAll(async () => {
  await agent?.stop('SIGTERM');
  await fleet?.stop();
  forwarder.server.close();
  upstream?.close();
  await cleanup();
  await cleanupAll();
});

const viaPathProxy = (url: string) =>
  curl([
    '-sS',
    '--max-time',
    '5',
    '--cacert',
    fleet.files.tlsCert,
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
