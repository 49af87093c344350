/**
 * Agent restarts and stops through the real binaries: a `tunnel-relay serve` (relayed only, and with its UDP port so that
 * the agent goes direct), one `tunnel-client run` whose upstream is a plain HTTP server. After each restart
 * (SIGTERM or kill -9, then a new process on the same state dir) the first path-proxy request sent once the agent
 * logs its session up is served: the hub replaced the previous run's stream session when the new run's first
 * probe arrived (relay/data/hub/agent-runs.ts). A client sending a small path-proxy request every 50 ms loses none
 * across SIGTERM of the agent (it drains: the hub holds new requests for its next run) and its restart.
 */

import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_TERMINATION_GRACE_SECONDS } from '../relay/control/manifests/agent-manifests.js';
import { AGENT_STOP_GRACE_MS } from '../tunnel-client/agent/agent.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  freeUdpPort,
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
import { listen, sampleHandler } from './proxy-fixtures.js';

const CLUSTER = 'edge-restart';
const SESSION_UP = 'WireGuard session to the hub is up';
let upstream: http.Server;
let upstreamPort: number;

beforeAll(async () => {
  buildIfStale();
  upstream = createServer(sampleHandler(CLUSTER));
  upstreamPort = await listen(upstream);
}, 180_000);

afterAll(async () => {
  upstream?.close();
  await cleanup();
});

describe.each(['relayed', 'direct'] as const)('an agent restart serves at once (%s path)', (mode) => {
  let relay: Proc;
  let ready: ReadyLine;
  let dir: string;
  let stateDir: string;

  beforeAll(async () => {
    dir = tempDir(`agent-restart-${mode}-`);
    const udp =
      mode === 'direct'
        ? ['--udp-port', String(await freeUdpPort()), '--stun-port', String(await freeUdpPort())]
        : [];
    const started = await startServe(join(dir, 'relay'), '127.0.0.1:0', udp);
    relay = started.proc;
    ready = started.ready;
    const created = await run(
      RELAY_BIN,
      ['cluster', 'create', CLUSTER, '--output', 'json'],
      adminEnvOf(ready),
    );
    expect(created.code, created.stderr).toBe(0);
    stateDir = await joinAgent({
      relayUrl: ready.url,
      cluster: CLUSTER,
      psk: (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk,
      caPin: ready.caPin,
      upstream: `http://127.0.0.1:${upstreamPort}`,
      prefix: `agent-restart-${mode}-agent`,
    });
  }, 120_000);

  afterAll(async () => {
    await relay?.stop();
  });

  function hello(timeoutMs = 10_000): Promise<HubReply> {
    return hubGet({
      url: `${ready.url}/api/v1/clusters/${CLUSTER}/proxy/hello`,
      ca: readFileSync(join(dir, 'relay', 'tls', 'cert.pem'), 'utf8'),
      token: ready.adminKey ?? '',
      timeoutMs,
    });
  }

  async function startAgent(): Promise<Proc> {
    const p = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    await p.waitFor((q) => q.stderr.includes(SESSION_UP), 20_000, 'the agent session up');
    return p;
  }

  it('five back-to-back restarts (SIGTERM and kill -9) each serve the first request after "session up"', async () => {
    let agent = await startAgent();
    try {
      expect(await hello()).toEqual({ status: 200, body: `hello from ${CLUSTER}` });
      const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGKILL', 'SIGTERM', 'SIGKILL', 'SIGTERM'];
      for (const [i, signal] of signals.entries()) {
        await agent.stop(signal);
        agent = await startAgent();
        const first = await hello();
        expect({ restart: i + 1, signal, ...first }).toEqual({
          restart: i + 1,
          signal,
          status: 200,
          body: `hello from ${CLUSTER}`,
        });
      }
    } finally {
      await agent.stop();
    }
  }, 180_000);

  it('SIGTERM of the agent and its restart: a request every 50 ms loses none', async () => {
    let agent = await startAgent();
    const failed: Array<HubReply & { at: number }> = [];
    let served = 0;
    const pending = new Set<Promise<void>>();
    const timer = setInterval(() => {
      const at = Date.now();
      const p = hello(30_000).then((r) => {
        if (r.status === 200 && r.body === `hello from ${CLUSTER}`) served++;
        else failed.push({ ...r, at });
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }, 50);
    try {
      await sleep(1_000);
      agent.child.kill('SIGTERM');
      const exitTimer = setTimeout(() => agent.child.kill('SIGKILL'), AGENT_STOP_GRACE_MS + 5_000);
      const code = await agent.exited;
      clearTimeout(exitTimer);
      expect(code).toBe(0);
      expect(agent.stderr).toContain('draining: the hub opens no new streams here');
      agent = await startAgent();
      await sleep(1_000);
    } finally {
      clearInterval(timer);
      await Promise.all([...pending]);
      await agent.stop();
    }
    expect(failed).toEqual([]);
    expect(served).toBeGreaterThan(30);
  }, 120_000);
});

it("the agent pods' termination grace covers the agent's drain", () => {
  expect(AGENT_TERMINATION_GRACE_SECONDS * 1000).toBeGreaterThanOrEqual(AGENT_STOP_GRACE_MS + 5_000);
});
