/**
 * The agent behind a real HTTP CONNECT proxy (tinyproxy, CONNECT limited to the relay's port): `join
 * --wait` and `run` with HTTPS_PROXY set register, lease and bring the WireGuard session up over /derp
 * through the proxy, and the hub reaches the agent's upstream through the relay's CONNECT entry. Basic
 * auth: right credentials work, wrong ones fail with a message naming the proxy and 407 and never the
 * password; `--proxy` wins over the environment.
 */
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  type Curl,
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
import { waitForAgentStatus } from './helpers/agent-status.js';
import { cleanupAll } from './helpers/cleanup.js';
import { startTinyproxy, type Tinyproxy } from './helpers/tinyproxy.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

let relay: Proc;
let ready: ReadyLine;
let relayPort: number;
let adminEnv: NodeJS.ProcessEnv;
let proxy: Tinyproxy;
let authProxy: Tinyproxy;
let upstream: http.Server;
let upstreamPort: number;
const AUTH = { user: 'agent', password: 'pass-w0rd.x' };

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);

async function createCluster(name: string): Promise<string[]> {
  const created = await admin('cluster', 'create', name, '--output', 'json');
  expect(created.code, created.stderr).toBe(0);
  return joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
}

function connects(p: Tinyproxy): number {
  return (p.log().match(new RegExp(`CONNECT 127\\.0\\.0\\.1:${relayPort} `, 'g')) ?? []).length;
}

function curlViaRelay(url: string): Promise<Curl> {
  const auth = `Proxy-Authorization: Bearer ${ready.adminKey}`;
  return curl(['-sS', '-p', '-x', ready.url, '--proxy-insecure', '--proxy-header', auth, url], 30_000);
}

beforeAll(async () => {
  buildIfStale();
  upstream = http.createServer(sampleHandler('upstream'));
  upstreamPort = await listen(upstream);
  const started = await startServe(join(tempDir('proxy-egress-'), 'relay'), '127.0.0.1:0');
  relay = started.proc;
  ready = started.ready;
  relayPort = Number(new URL(ready.url).port);
  adminEnv = adminEnvOf(ready);
  proxy = await startTinyproxy({ connectPorts: [relayPort] });
  authProxy = await startTinyproxy({ connectPorts: [relayPort], auth: AUTH });
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await proxy?.stop();
  await authProxy?.stop();
  upstream?.close();
  await cleanup();
  await cleanupAll();
});

describe('agent through tinyproxy', () => {
  it('join --wait and run with HTTPS_PROXY: registration, lease and /derp all go through the proxy', async () => {
    const args = await createCluster('edge-1');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const env = cleanEnv({ HTTPS_PROXY: proxy.url() });
    const before = connects(proxy);
    const j = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--upstream', `http://127.0.0.1:${upstreamPort}`, '--wait'],
      env,
      40_000,
    );
    expect(j.code, j.stderr).toBe(0);
    expect(j.stderr).toContain(`via proxy ${proxy.url()} (from environment)`);
    // Registration (HTTPS) and the WebSocket (/derp) each opened a tunnel.
    expect(connects(proxy) - before).toBeGreaterThanOrEqual(2);

    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env);
    try {
      await waitConnected(adminEnv, 'edge-1');
      const r = await curlViaRelay(`http://edge-1.clusters.local:${upstreamPort}/hello`);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('hello from upstream');
      expect(connects(proxy) - before).toBeGreaterThanOrEqual(4);
    } finally {
      await agent.stop();
    }
  }, 90_000);

  it('basic auth: --proxy with user:pass@ works and wins over a dead HTTPS_PROXY', async () => {
    const args = await createCluster('edge-2');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const env = cleanEnv({ HTTPS_PROXY: 'http://127.0.0.1:1' });
    const before = connects(authProxy);
    const j = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--proxy', authProxy.url(AUTH), '--wait'],
      env,
      40_000,
    );
    expect(j.code, j.stderr).toBe(0);
    expect(connects(authProxy) - before).toBeGreaterThanOrEqual(2);
    expect(j.stderr).not.toContain('w0rd');
    expect(j.stderr).toContain('(from flag)');
  }, 60_000);

  it('a running agent whose proxy refuses keeps retrying and shows PROXY_FAILED in status and logs', async () => {
    const args = await createCluster('edge-6');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const j = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--proxy', authProxy.url(AUTH), '--wait'],
      cleanEnv(),
      40_000,
    );
    expect(j.code, j.stderr).toBe(0);
    // run with the proxy's credentials missing: every relay call is refused with 407.
    const agent = new Proc(
      CLIENT_BIN,
      ['run', '--state-dir', stateDir, '--proxy', authProxy.url()],
      cleanEnv(),
    );
    try {
      await agent.waitFor(
        (p) => /PROXY_FAILED: proxy http:\/\/127\.0\.0\.1:\d+ answered 407 .*retrying in/.test(p.stderr),
        20_000,
        'the lease failure in the log',
      );
      const { value: status } = await waitForAgentStatus<{
        lastError: string | null;
        failures: number;
        agentRunning: boolean;
      }>({
        stateDir,
        what: 'PROXY_FAILED in the status',
        until: (s) => s.lastError?.includes('PROXY_FAILED') === true,
        timeoutMs: 15_000,
      });
      expect(status?.agentRunning).toBe(true);
      expect(status?.lastError).toContain(
        `answered 407 Proxy Authentication Required to CONNECT 127.0.0.1:${relayPort}`,
      );
      expect(status?.failures).toBeGreaterThan(0);
      expect(agent.child.exitCode).toBeNull();
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it('no credentials: PROXY_FAILED naming the proxy and 407, exit 1', async () => {
    const args = await createCluster('edge-5');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const r = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--wait'],
      cleanEnv({ HTTPS_PROXY: authProxy.url() }),
      40_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `PROXY_FAILED: proxy ${authProxy.url()} answered 407 Proxy Authentication Required to CONNECT 127.0.0.1:${relayPort} (the proxy wants credentials`,
    );
  }, 60_000);

  it('wrong credentials: PROXY_FAILED naming the proxy and its refusal, exit 1, no password anywhere', async () => {
    const args = await createCluster('edge-3');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const bad = { user: 'agent', password: 'wrong-s3cret' };
    const r = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--wait'],
      cleanEnv({ https_proxy: authProxy.url(bad) }),
      40_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PROXY_FAILED');
    // tinyproxy 1.11 answers wrong credentials with 401 (407 when none are sent).
    expect(r.stderr).toMatch(
      new RegExp(
        `proxy http://agent:\\*\\*\\*@127\\.0\\.0\\.1:${authProxy.port} answered 40[17] [A-Za-z ]+ to CONNECT 127\\.0\\.0\\.1:${relayPort} \\(the proxy refused the credentials`,
      ),
    );
    expect(r.stderr + r.stdout).not.toContain('s3cret');
  }, 60_000);

  it('a proxy that is not there: PROXY_FAILED naming it and the destination', async () => {
    const args = await createCluster('edge-4');
    const stateDir = join(tempDir('proxy-egress-agent-'), 'state');
    const r = await run(
      CLIENT_BIN,
      [...args, '--state-dir', stateDir, '--proxy', 'http://u:hidden@127.0.0.1:1'],
      cleanEnv(),
      40_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /PROXY_FAILED.*proxy http:\/\/u:\*\*\*@127\.0\.0\.1:1 failed for CONNECT 127\.0\.0\.1:\d+: ECONNREFUSED/,
    );
    expect(r.stderr).not.toContain('hidden');
  }, 60_000);
});
