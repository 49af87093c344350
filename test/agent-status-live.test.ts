/**
 * The cluster's state tracks its agent within seconds, through the real binaries: a `tunnel-relay serve` (relayed
 * only, and with its UDP port so that the agent goes direct) and a `tunnel-client run`. A new cluster is `Never
 * connected`; with its agent up it is `Connected`; after kill -9 of the agent the API, `cluster get` and `cluster
 * list` say `Disconnected` within 3 s (while the lease's Available condition still says True). A deleted cluster's
 * agent exits within seconds, saying what to run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  startServe,
  tempDir,
} from './cli-harness.js';
import { hubGet } from './helpers/hub-get.js';
import { joinAgent } from './helpers/joined-agent.js';
import { pollUntil } from './helpers/wait.js';

const SESSION_UP = 'WireGuard session to the hub is up';

beforeAll(() => buildIfStale(), 180_000);
afterAll(async () => {
  await cleanup();
});

interface ClusterJson {
  state: string;
  connected: boolean;
  path: string;
  conditions: Array<{ type: string; status: string }>;
}

describe.each(['relayed', 'direct'] as const)('cluster state (%s path)', (mode) => {
  let relay: Proc;
  let ready: ReadyLine;
  let caPem: string;
  const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnvOf(ready));

  beforeAll(async () => {
    const udp =
      mode === 'direct'
        ? ['--udp-port', String(await freeUdpPort()), '--stun-port', String(await freeUdpPort())]
        : [];
    const dir = tempDir(`status-live-${mode}-`);
    const started = await startServe(join(dir, 'relay'), '127.0.0.1:0', udp);
    relay = started.proc;
    ready = started.ready;
    caPem = readFileSync(join(dir, 'relay', 'tls', 'cert.pem'), 'utf8');
  }, 120_000);

  afterAll(async () => {
    await relay?.stop();
  });

  async function clusterJson(name: string): Promise<ClusterJson> {
    const r = await admin('cluster', 'get', name, '--output', 'json');
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as ClusterJson;
  }

  /** The API's view of the cluster (one HTTPS request: no CLI start in the measured time). */
  async function apiCluster(name: string): Promise<ClusterJson> {
    const r = await hubGet({
      url: `${ready.url}/api/v1/clusters/${name}`,
      ca: caPem,
      token: ready.adminKey ?? '',
    });
    if (r.status !== 200) throw new Error(`GET ${name}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as ClusterJson;
  }

  async function joinedAgent(name: string): Promise<Proc> {
    const created = await admin('cluster', 'create', name, '--output', 'json');
    expect(created.code, created.stderr).toBe(0);
    expect((await clusterJson(name)).state).toBe('Never connected');
    const stateDir = await joinAgent({
      relayUrl: ready.url,
      cluster: name,
      psk: (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk,
      caPin: ready.caPin,
      upstream: 'http://127.0.0.1:9',
      prefix: `status-live-${mode}-agent`,
    });
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    await agent.waitFor((p) => p.stderr.includes(SESSION_UP), 20_000, 'the agent session up');
    return agent;
  }

  it('kill -9 of the agent: Disconnected within 3 s in the API, cluster get and cluster list', async () => {
    const name = `edge-kill-${mode}`;
    const agent = await joinedAgent(name);
    try {
      await pollUntil({
        what: `${name} Connected on the ${mode} path`,
        read: () => clusterJson(name),
        until: (c) => c.state === 'Connected' && c.path === mode,
        timeoutMs: 20_000,
        intervalMs: 200,
      });
      await agent.stop('SIGKILL');
      const { value, elapsedMs } = await pollUntil({
        what: `${name} Disconnected`,
        read: () => apiCluster(name),
        until: (c) => c.state === 'Disconnected',
        timeoutMs: 10_000,
        intervalMs: 100,
      });
      expect(elapsedMs).toBeLessThan(3_000);
      expect(value).toMatchObject({ connected: false, path: 'none' });
      // The lease keeps its meaning: still fresh.
      expect(value.conditions.find((c) => c.type === 'Available')?.status).toBe('True');
      const got = await admin('cluster', 'get', name);
      expect(got.stdout, got.stdout).toMatch(/^state: +Disconnected$/m);
      const listed = await admin('cluster', 'list');
      expect(listed.stdout).toMatch(
        new RegExp(`^${name} .* Accepted +Disconnected +joined +True +none `, 'm'),
      );
    } finally {
      await agent.stop('SIGKILL');
    }
  }, 90_000);

  it('a deleted cluster: its agent exits within 5 s naming unjoin', async () => {
    const name = `edge-del-${mode}`;
    const agent = await joinedAgent(name);
    try {
      const deleted = await admin('cluster', 'delete', name);
      expect(deleted.code, deleted.stderr).toBe(0);
      const at = Date.now();
      const timer = setTimeout(() => agent.child.kill('SIGKILL'), 15_000);
      const code = await agent.exited;
      clearTimeout(timer);
      expect(Date.now() - at).toBeLessThan(5_000);
      expect(code).toBe(1);
      expect(agent.stderr).toMatch(/error UNAUTHENTICATED: .*cluster edge-del-\w+ was deleted on the hub/);
      expect(agent.stderr).toContain("Run 'tunnel-client unjoin");
    } finally {
      await agent.stop('SIGKILL');
    }
  }, 90_000);
});
