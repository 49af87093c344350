/**
 * One cluster's agents held by different replicas of a fleet: two `tunnel-relay serve` replicas (A, B) on a
 * throw-away PostgreSQL, a cluster of two agent replicas, agent 0 joined and connected through A's own URL and
 * agent 1 through B's. A client sends a small path-proxy request every 50 ms through each replica: every one is
 * served (by the replica's own agent). kill -9 of agent 1 loses none sent once both replicas show it gone, and
 * the cluster reads Degraded, then Connected again after agent 1 restarts, from both replicas' APIs. A GET in
 * flight on the killed agent is sent again to the live one within a second or so (not after the 8 s disconnect
 * grace), since the cluster has another live agent. An agent that drains (SIGTERM, a request still in flight on it)
 * is no hop target for the other replica: a request there waits for an agent that takes it (here the other agent's
 * next run) instead of queueing behind the leaving one.
 */

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DISCONNECT_GRACE_MS } from '../relay/data/proxy/hub-streams.js';
import { ARRIVAL_WAIT_MS } from '../relay/fleet/mesh/mesh-routing.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  run,
  sleep,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { type HubReply, hubGet } from './helpers/hub-get.js';
import { joinAgent } from './helpers/joined-agent.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { listen } from './proxy-fixtures.js';

const CLUSTER = 'edge-fleet-set';
const SESSION_UP = 'WireGuard session to the hub is up';
const SLOW_MS = 3_000;
/** `/hold` answers after this long: a request that keeps a SIGTERM'd agent draining meanwhile. */
const HOLD_MS = 8_000;

interface ClusterJson {
  state: string;
  connected: boolean;
  agentsRegistered: number;
  agentsConnected: number;
  agents: Array<{ publicKey: string; connected: boolean; state: string }>;
}

let fleet: ReplicaFleet;
let replicas: Replica[] = [];
let adminKey: string;
let ca: string;
const stateDirs: string[] = [];
const agents: Proc[] = [];
const upstreams: Server[] = [];

/** Agent i's upstream: `/hello` answers with its number at once, `/slow` after SLOW_MS (a request held in flight). */
async function upstreamFor(i: number): Promise<number> {
  const server = createServer((req, res) => {
    if (req.url === '/slow') return void setTimeout(() => res.end(`slow from agent ${i}`), SLOW_MS);
    if (req.url === '/hold') return void setTimeout(() => res.end(`held by agent ${i}`), HOLD_MS);
    res.end(`hello from agent ${i}`);
  });
  upstreams.push(server);
  return listen(server);
}

async function startAgent(i: number): Promise<Proc> {
  const p = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDirs[i]!], cleanEnv());
  await p.waitFor((q) => q.stderr.includes(SESSION_UP), 20_000, `agent ${i} session up`);
  return p;
}

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('fleet-agent-set');
  replicas = [await fleet.startReplica(), await fleet.startReplica()];
  adminKey = fleet.adminKey();
  ca = readFileSync(fleet.files.tlsCert, 'utf8');
  const admin = adminEnvOf({ ...replicas[0]!.ready, adminKey });
  const created = await run(
    RELAY_BIN,
    ['cluster', 'create', CLUSTER, '--agent-replicas', '2', '--output', 'json'],
    admin,
  );
  expect(created.code, created.stderr).toBe(0);
  const psk = (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
  for (let i = 0; i < 2; i++) {
    const upstream = `http://127.0.0.1:${await upstreamFor(i)}`;
    // Each agent joins (and so connects) through its own replica's URL.
    const relayUrl = replicas[i]!.ready.url;
    stateDirs.push(
      await joinAgent({
        relayUrl,
        cluster: CLUSTER,
        psk,
        caPin: fleet.files.caPin,
        upstream,
        prefix: `fleet-set-${i}`,
      }),
    );
    agents.push(await startAgent(i));
  }
  await waitForState('Connected', 2);
}, 240_000);

afterAll(async () => {
  for (const a of agents) await a.stop();
  await fleet?.stop();
  for (const u of upstreams) u.close();
  await cleanup();
  await cleanupAll();
});

function hubRequest(r: Replica, path: string, timeoutMs = 30_000): Promise<HubReply> {
  return hubGet({ url: `${r.ready.url}${path}`, ca, token: adminKey, timeoutMs });
}

async function clusterOn(r: Replica): Promise<ClusterJson> {
  const reply = await hubRequest(r, `/api/v1/clusters/${CLUSTER}`, 5_000);
  expect(reply.status, reply.body).toBe(200);
  return JSON.parse(reply.body) as ClusterJson;
}

/** Polls both replicas' APIs until each shows `state` with `connected` agents. */
async function waitForState(state: string, connected: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: ClusterJson[] = [];
  while (Date.now() < deadline) {
    last = await Promise.all(replicas.map(clusterOn));
    if (last.every((c) => c.state === state && c.agentsConnected === connected)) return;
    await sleep(100);
  }
  throw new Error(`cluster not ${state} with ${connected} agents on both replicas: ${JSON.stringify(last)}`);
}

/** Sends `/hello` through each replica every 50 ms while `body` runs; returns the failures with their send times. */
async function underTraffic(body: () => Promise<void>) {
  const failed: Array<HubReply & { at: number; replica: number }> = [];
  const served = new Map<string, number>();
  const pending = new Set<Promise<void>>();
  const timer = setInterval(() => {
    replicas.forEach((r, replica) => {
      const at = Date.now();
      const p = hubRequest(r, `/api/v1/clusters/${CLUSTER}/proxy/hello`).then((reply) => {
        const ok = reply.status === 200 && reply.body.startsWith('hello from agent ');
        if (ok) served.set(`${replica}:${reply.body}`, (served.get(`${replica}:${reply.body}`) ?? 0) + 1);
        else failed.push({ ...reply, at, replica });
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    });
  }, 50);
  try {
    await sleep(500);
    await body();
    await sleep(500);
  } finally {
    clearInterval(timer);
    await Promise.all([...pending]);
  }
  return { failed, served };
}

describe('agents of one cluster on different replicas', () => {
  it('both replicas count both agents; each serves requests through its own agent', async () => {
    for (const r of replicas) {
      const c = await clusterOn(r);
      expect(c).toMatchObject({
        state: 'Connected',
        connected: true,
        agentsRegistered: 2,
        agentsConnected: 2,
      });
      expect(c.agents.every((a) => a.connected && a.state === 'Connected')).toBe(true);
    }
    const { failed, served } = await underTraffic(() => sleep(1_000));
    expect(failed).toEqual([]);
    expect(served.get('0:hello from agent 0') ?? 0).toBeGreaterThan(10);
    expect(served.get('1:hello from agent 1') ?? 0).toBeGreaterThan(10);
  }, 60_000);

  it('kill -9 of one agent: none lost once the replicas show it gone; Degraded, then Connected', async () => {
    let killedAt = 0;
    let goneAt = 0;
    let inFlight: Promise<HubReply & { endedAt: number }> | null = null;
    const { failed, served } = await underTraffic(async () => {
      // A request held in flight on agent 1 (B's own agent) when it dies.
      inFlight = hubRequest(replicas[1]!, `/api/v1/clusters/${CLUSTER}/proxy/slow`).then((r) => ({
        ...r,
        endedAt: Date.now(),
      }));
      await sleep(500);
      killedAt = Date.now();
      await agents[1]!.stop('SIGKILL');
      await waitForState('Degraded', 1);
      goneAt = Date.now();
      await sleep(2_000);
      agents[1] = await startAgent(1);
      await waitForState('Connected', 2);
    });
    expect(failed.filter((f) => f.at >= goneAt)).toEqual([]);
    expect(goneAt - killedAt).toBeLessThan(3_000);
    // Requests through B kept being served while its own agent was gone (one hop to A's).
    expect(served.get('1:hello from agent 0') ?? 0).toBeGreaterThan(10);
    // The GET in flight on the killed agent was sent again to the live one (it has no body, no answer had begun) as
    // soon as B dropped the dead agent's link, not after the disconnect grace.
    const held = await inFlight!;
    expect(held).toMatchObject({ status: 200, body: 'slow from agent 0' });
    expect(held.endedAt - killedAt).toBeLessThan(SLOW_MS + DEFAULT_DISCONNECT_GRACE_MS / 2);
  }, 120_000);

  it("a draining agent on B gets no hop from A: A's request waits for an agent that takes it", async () => {
    // A holds no agent: agent 0 is killed.
    await agents[0]!.stop('SIGKILL');
    await waitForState('Degraded', 1);
    // Agent 1 (B's) drains for HOLD_MS: SIGTERM with a request in flight on it.
    const held = hubRequest(replicas[1]!, `/api/v1/clusters/${CLUSTER}/proxy/hold`);
    await sleep(500);
    agents[1]!.child.kill('SIGTERM');
    await sleep(1_500);
    // Agent 0's next run starts now; a request through A meanwhile must reach it, not wait on the leaving agent.
    const restarted = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDirs[0]!], cleanEnv());
    agents[0] = restarted;
    const sentAt = Date.now();
    const reply = await hubRequest(replicas[0]!, `/api/v1/clusters/${CLUSTER}/proxy/hello`);
    const tookMs = Date.now() - sentAt;
    expect(reply).toMatchObject({ status: 200, body: 'hello from agent 0' });
    expect(tookMs).toBeLessThan(ARRIVAL_WAIT_MS);
    // The request in flight on the draining agent was answered by it.
    expect(await held).toMatchObject({ status: 200, body: 'held by agent 1' });
    expect(await agents[1]!.exited).toBe(0);
  }, 90_000);
});
