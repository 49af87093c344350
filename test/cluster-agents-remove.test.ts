/**
 * Scaling an agent set down: a real `tunnel-relay serve`, a cluster of two agent replicas, both agents running
 * (`tunnel-client run`). Agent 1 stops for good: the cluster reads Degraded. `tunnel-relay cluster agents remove
 * NAME KEY` removes it: the cluster reads Connected with one registered agent, the removal is in the audit log,
 * requests keep being served by agent 0, and the PSK's freed place admits a new key. A key that is no agent of the
 * cluster is 404 NOT_FOUND naming it; a malformed key is refused by the CLI before any request.
 */

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { hubGet } from './helpers/hub-get.js';
import { joinAgent } from './helpers/joined-agent.js';
import { listen } from './proxy-fixtures.js';

const CLUSTER = 'edge-scaled';
const SESSION_UP = 'WireGuard session to the hub is up';

interface ClusterJson {
  state: string;
  agentsRegistered: number;
  agentsConnected: number;
  agents: Array<{ publicKey: string; connected: boolean }>;
}

let relay: Proc;
let ready: ReadyLine;
let dir: string;
let psk: string;
const stateDirs: string[] = [];
const agents: Proc[] = [];
const upstreams: Server[] = [];

async function upstreamUrl(i: number): Promise<string> {
  const server = createServer((_req, res) => res.end(`hello from agent ${i}`));
  upstreams.push(server);
  return `http://127.0.0.1:${await listen(server)}`;
}

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('agents-remove-');
  ({ proc: relay, ready } = await startServe(join(dir, 'relay'), '127.0.0.1:0'));
  const created = await run(
    RELAY_BIN,
    ['cluster', 'create', CLUSTER, '--agent-replicas', '2', '--output', 'json'],
    adminEnvOf(ready),
  );
  expect(created.code, created.stderr).toBe(0);
  psk = (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
  for (let i = 0; i < 2; i++) {
    const join1 = {
      relayUrl: ready.url,
      cluster: CLUSTER,
      psk,
      caPin: ready.caPin,
      upstream: await upstreamUrl(i),
    };
    stateDirs.push(await joinAgent({ ...join1, prefix: `agents-remove-${i}` }));
    const p = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDirs[i]!], cleanEnv());
    await p.waitFor((q) => q.stderr.includes(SESSION_UP), 20_000, `agent ${i} session up`);
    agents.push(p);
  }
  await waitForState('Connected', 2, 2);
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop();
  await relay?.stop();
  for (const u of upstreams) u.close();
  await cleanup();
});

function api(path: string) {
  const ca = readFileSync(join(dir, 'relay', 'tls', 'cert.pem'), 'utf8');
  return hubGet({ url: `${ready.url}${path}`, ca, token: ready.adminKey ?? '', timeoutMs: 10_000 });
}

async function waitForState(state: string, registered: number, connected: number): Promise<ClusterJson> {
  const deadline = Date.now() + 15_000;
  let last: ClusterJson | null = null;
  while (Date.now() < deadline) {
    const r = await api(`/api/v1/clusters/${CLUSTER}`);
    last = JSON.parse(r.body) as ClusterJson;
    if (last.state === state && last.agentsRegistered === registered && last.agentsConnected === connected)
      return last;
    await sleep(100);
  }
  throw new Error(`cluster not ${state} with ${registered}/${connected} agents: ${JSON.stringify(last)}`);
}

describe('cluster agents remove', () => {
  it('removes a stopped agent: the cluster is Connected again, the removal audited, requests still served', async () => {
    const before = await waitForState('Connected', 2, 2);
    await agents[1]!.stop('SIGTERM');
    const degraded = await waitForState('Degraded', 2, 1);
    const gone = degraded.agents.find((a) => !a.connected)!.publicKey;
    expect(before.agents.map((a) => a.publicKey)).toContain(gone);

    const removed = await run(RELAY_BIN, ['cluster', 'agents', 'remove', CLUSTER, gone], adminEnvOf(ready));
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`removed agent ${gone} from cluster ${CLUSTER}`);
    const after = await waitForState('Connected', 1, 1);
    expect(after.agents.map((a) => a.publicKey)).not.toContain(gone);

    const audit = await api('/api/v1/audit?limit=50');
    expect(audit.body).toContain('cluster.agent-remove');
    for (let i = 0; i < 4; i++)
      expect((await api(`/api/v1/clusters/${CLUSTER}/proxy/hello`)).body).toBe('hello from agent 0');

    // The freed place admits a new key under a fresh PSK (the first one was spent by the two keys).
    const rotated = await run(
      RELAY_BIN,
      ['cluster', 'rotate-psk', CLUSTER, '--output', 'json'],
      adminEnvOf(ready),
    );
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh = (JSON.parse(rotated.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
    const join2 = {
      relayUrl: ready.url,
      cluster: CLUSTER,
      psk: fresh,
      caPin: ready.caPin,
      upstream: await upstreamUrl(2),
    };
    await joinAgent({ ...join2, prefix: 'agents-remove-new' });
    await waitForState('Degraded', 2, 1);
  }, 90_000);

  it('a key that is no agent of the cluster is 404 NOT_FOUND naming it; a malformed key never leaves the CLI', async () => {
    const unknown = `${'Q'.repeat(43)}=`;
    const r = await run(RELAY_BIN, ['cluster', 'agents', 'remove', CLUSTER, unknown], adminEnvOf(ready));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('NOT_FOUND');
    expect(r.stderr).toContain(unknown);
    const bad = await run(
      RELAY_BIN,
      ['cluster', 'agents', 'remove', CLUSTER, 'not-a-key'],
      adminEnvOf(ready),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('BAD_INPUT');
    expect(bad.stderr).toContain('not-a-key');
  }, 30_000);
});
