/**
 * Agent replicas through the real binaries: a `tunnel-relay serve`, a cluster created with `--agent-replicas N`
 * (N = 2 and 3), N `tunnel-client run` processes joined with the one PSK, each with its own key, address and
 * upstream (an HTTP server answering with the agent's number). A client sends a small path-proxy request every
 * 50 ms: SIGTERM of one agent loses none; kill -9 of one loses at most the requests in flight on it and none sent
 * once the relay shows it gone; restarting each agent in turn loses none. `cluster get -o json` lists the agents,
 * says Degraded while one is down and Connected again once it is back. One relay and one agent set per N, shared
 * by the tests of that N.
 */

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_STOP_GRACE_MS } from '../tunnel-client/agent/agent.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { type HubReply, hubGet } from './helpers/hub-get.js';
import { joinAgent } from './helpers/joined-agent.js';
import { listen } from './proxy-fixtures.js';

const SESSION_UP = 'WireGuard session to the hub is up';

interface AgentView {
  publicKey: string;
  address: string | null;
  connected: boolean;
  state: string;
}
interface ClusterJson {
  state: string;
  connected: boolean;
  agentReplicas: number;
  agentsRegistered: number;
  agentsConnected: number;
  agents: AgentView[];
}

const upstreams: Server[] = [];

beforeAll(() => buildIfStale(), 180_000);

afterAll(async () => {
  for (const u of upstreams) u.close();
  await cleanup();
});

describe.each([2, 3])('a cluster of %i agent replicas', (n) => {
  const cluster = `edge-set-${n}`;
  let relay: Proc;
  let ready: ReadyLine;
  let dir: string;
  const stateDirs: string[] = [];
  const agents: Proc[] = [];

  beforeAll(async () => {
    dir = tempDir(`agent-replicas-${n}-`);
    const started = await startServe(join(dir, 'relay'), '127.0.0.1:0');
    relay = started.proc;
    ready = started.ready;
    const created = await run(
      RELAY_BIN,
      ['cluster', 'create', cluster, '--agent-replicas', String(n), '--output', 'json'],
      adminEnvOf(ready),
    );
    expect(created.code, created.stderr).toBe(0);
    const psk = (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
    for (let i = 0; i < n; i++) {
      const upstream = createServer((_req, res) => res.end(`hello from agent ${i}`));
      upstreams.push(upstream);
      const port = await listen(upstream);
      const join1 = {
        relayUrl: ready.url,
        cluster,
        psk,
        caPin: ready.caPin,
        upstream: `http://127.0.0.1:${port}`,
      };
      stateDirs.push(await joinAgent({ ...join1, prefix: `agent-replicas-${n}-${i}` }));
    }
    // One key more with the same PSK is refused with its own code.
    const extra = await joinAgent({
      relayUrl: ready.url,
      cluster,
      psk,
      caPin: ready.caPin,
      upstream: 'http://127.0.0.1:1',
      prefix: `agent-replicas-${n}-extra`,
    }).catch((err: Error) => err.message);
    expect(extra).toContain('AGENT_REPLICAS_FULL');
    for (let i = 0; i < n; i++) agents.push(await startAgent(i));
    await waitForState('Connected', n);
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await a.stop();
    await relay?.stop();
  });

  async function startAgent(i: number): Promise<Proc> {
    const p = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDirs[i]!], cleanEnv());
    await p.waitFor((q) => q.stderr.includes(SESSION_UP), 20_000, `agent ${i} session up`);
    return p;
  }

  /** `cluster get -o json` (the CLI), or with `api` the same route read directly (polled: no process per read). */
  async function clusterGet(api = false): Promise<ClusterJson> {
    if (api) {
      const r = await hubGet({
        url: `${ready.url}/api/v1/clusters/${cluster}`,
        ca: readFileSync(join(dir, 'relay', 'tls', 'cert.pem'), 'utf8'),
        token: ready.adminKey ?? '',
        timeoutMs: 5_000,
      });
      expect(r.status, r.body).toBe(200);
      return JSON.parse(r.body) as ClusterJson;
    }
    const r = await run(RELAY_BIN, ['cluster', 'get', cluster, '--output', 'json'], adminEnvOf(ready));
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as ClusterJson;
  }

  async function waitForState(state: string, connected: number, timeoutMs = 15_000): Promise<ClusterJson> {
    const deadline = Date.now() + timeoutMs;
    let last: ClusterJson | null = null;
    while (Date.now() < deadline) {
      last = await clusterGet(true);
      if (last.state === state && last.agentsConnected === connected) return last;
      await sleep(100);
    }
    throw new Error(`cluster ${cluster} not ${state} with ${connected} agents: ${JSON.stringify(last)}`);
  }

  function hello(timeoutMs = 30_000): Promise<HubReply> {
    return hubGet({
      url: `${ready.url}/api/v1/clusters/${cluster}/proxy/hello`,
      ca: readFileSync(join(dir, 'relay', 'tls', 'cert.pem'), 'utf8'),
      token: ready.adminKey ?? '',
      timeoutMs,
    });
  }

  /** Sends a request every 50 ms while `body` runs; returns the failures (with their send times) and the count served. */
  async function underTraffic(body: () => Promise<void>) {
    const failed: Array<HubReply & { at: number }> = [];
    const servedBy = new Map<string, number>();
    const pending = new Set<Promise<void>>();
    const timer = setInterval(() => {
      const at = Date.now();
      const p = hello().then((r) => {
        if (r.status === 200 && r.body.startsWith('hello from agent ')) {
          servedBy.set(r.body, (servedBy.get(r.body) ?? 0) + 1);
        } else failed.push({ ...r, at });
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }, 50);
    try {
      await sleep(500);
      await body();
      await sleep(500);
    } finally {
      clearInterval(timer);
      await Promise.all([...pending]);
    }
    return { failed, servedBy };
  }

  it('lists every agent with its own key and address; requests are spread across them', async () => {
    const c = await clusterGet();
    expect(c).toMatchObject({ state: 'Connected', connected: true, agentReplicas: n, agentsRegistered: n });
    expect(c.agents).toHaveLength(n);
    expect(new Set(c.agents.map((a) => a.publicKey)).size).toBe(n);
    expect(new Set(c.agents.map((a) => a.address)).size).toBe(n);
    expect(c.agents.every((a) => a.connected && a.state === 'Connected')).toBe(true);
    const bodies = new Set<string>();
    for (let i = 0; i < 4 * n; i++) bodies.add((await hello()).body);
    expect(bodies.size).toBe(n);
  }, 60_000);

  it('SIGTERM of one agent loses no request; the cluster is Degraded, then Connected once it is back', async () => {
    const { failed, servedBy } = await underTraffic(async () => {
      agents[0]!.child.kill('SIGTERM');
      const exitTimer = setTimeout(() => agents[0]!.child.kill('SIGKILL'), AGENT_STOP_GRACE_MS + 5_000);
      expect(await agents[0]!.exited).toBe(0);
      clearTimeout(exitTimer);
      const degraded = await waitForState('Degraded', n - 1);
      expect(degraded.connected).toBe(true);
      expect(degraded.agents.filter((a) => !a.connected)).toHaveLength(1);
      agents[0] = await startAgent(0);
      await waitForState('Connected', n);
    });
    expect(failed).toEqual([]);
    expect([...servedBy.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(30);
  }, 120_000);

  it('kill -9 of one agent loses at most the requests in flight, none sent once the relay shows it gone', async () => {
    let killedAt = 0;
    let goneAt = 0;
    const { failed } = await underTraffic(async () => {
      killedAt = Date.now();
      await agents[n - 1]!.stop('SIGKILL');
      await waitForState('Degraded', n - 1);
      goneAt = Date.now();
      await sleep(2_000);
      agents[n - 1] = await startAgent(n - 1);
      await waitForState('Connected', n);
    });
    // Sent before the kill and still open then, or in the instant before the relay noticed: at most a few.
    expect(failed.filter((f) => f.at >= goneAt)).toEqual([]);
    expect(failed.every((f) => f.at <= goneAt)).toBe(true);
    // The relay sees the agent's relay connection close at once: the cluster shows it within 3 s.
    expect(goneAt - killedAt).toBeLessThan(3_000);
  }, 120_000);

  it('restarting each agent in turn (SIGTERM, then a new process on its state) loses no request', async () => {
    const { failed, servedBy } = await underTraffic(async () => {
      for (let i = 0; i < n; i++) {
        await agents[i]!.stop('SIGTERM');
        agents[i] = await startAgent(i);
        await waitForState('Connected', n);
      }
    });
    expect(failed).toEqual([]);
    expect(servedBy.size).toBe(n);
  }, 180_000);
});
