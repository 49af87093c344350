/**
 * Port-443-only egress for real: the agent runs in a network namespace whose firewall lets out only TCP
 * to the proxy (allowOnlyTcpTo); the relay and tinyproxy run on the host side of the veth. The agent joins
 * (`join --wait`), runs, and the hub reaches the agent's upstream through the relay's CONNECT entry, and
 * the firewall's counters show packets to the proxy and none dropped (nothing tried to leave for any
 * other destination, UDP included).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  type Curl,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { addRule, allowOnlyTcpTo, type IptablesRule } from './helpers/iptables.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { execCommand, type ProcessHandle } from './helpers/process.js';
import { startTinyproxy, type Tinyproxy } from './helpers/tinyproxy.js';
import { waitFor } from './helpers/wait.js';

let ns: Netns;
let relay: Proc;
let ready: ReadyLine;
let relayPort: number;
let proxy: Tinyproxy;
let fw: { allow: IptablesRule; drop: IptablesRule };
let adminEnv: NodeJS.ProcessEnv;
const UPSTREAM_PORT = 18_080;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'iptables', 'tinyproxy', 'curl']);
  buildIfStale();
  ns = await createNetns('pxe', { subnet: 'auto', defaultRoute: true });
  const hostAddr = ns.hostAddress ?? '';
  const started = await startServe(join(tempDir('egress-netns-'), 'relay'), `${hostAddr}:0`);
  relay = started.proc;
  ready = started.ready;
  relayPort = Number(new URL(ready.url).port);
  proxy = await startTinyproxy({ listen: hostAddr, connectPorts: [relayPort] });
  fw = await allowOnlyTcpTo(ns.name, hostAddr, proxy.port);
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await proxy?.stop();
  await ns?.destroy();
  await cleanup();
  await cleanupAll();
});

function curlViaRelay(url: string): Promise<Curl> {
  const auth = `Proxy-Authorization: Bearer ${ready.adminKey}`;
  return curl(['-sS', '-p', '-x', ready.url, '--proxy-insecure', '--proxy-header', auth, url], 30_000);
}

describe('agent in a namespace that may only reach the proxy', () => {
  it('without the proxy the relay is unreachable from inside (the firewall holds)', async () => {
    const before = (await fw.drop.counters()).packets;
    const r = await execCommand('curl', ['-sk', '--max-time', '2', `${ready.url}/healthz`], {
      netns: ns.name,
      timeoutMs: 10_000,
    }).catch((e: Error) => e);
    expect(r).toBeInstanceOf(Error);
    expect((await fw.drop.counters()).packets).toBeGreaterThan(before);
  });

  it('joins, runs and serves hub traffic through the proxy; nothing else leaves the namespace', async () => {
    await fw.drop.remove();
    fw = { allow: fw.allow, drop: await addRule(ns.name, 'OUTPUT', [], 'DROP') }; // fresh counters
    const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-ns', '--output', 'json'], adminEnv);
    expect(created.code, created.stderr).toBe(0);
    const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
    const stateDir = join(tempDir('egress-netns-agent-'), 'state');
    const env = { HTTPS_PROXY: proxy.url(), NO_PROXY: '', no_proxy: '', https_proxy: '' };
    const upstream: ProcessHandle = ns.spawn(process.execPath, [
      '-e',
      `require('http').createServer((q, s) => s.end('hello from the namespace')).listen(${UPSTREAM_PORT}, '127.0.0.1')`,
    ]);
    const joined = await execCommand(
      process.execPath,
      [
        CLIENT_BIN,
        ...args,
        '--state-dir',
        stateDir,
        '--upstream',
        `http://127.0.0.1:${UPSTREAM_PORT}`,
        '--wait',
      ],
      { netns: ns.name, env, timeoutMs: 45_000 },
    );
    expect(joined.stderr).toContain(`via proxy ${proxy.url()}`);
    const agent = ns.spawn(process.execPath, [CLIENT_BIN, 'run', '--state-dir', stateDir], { env });
    try {
      await waitFor(
        async () => {
          const r = await run(RELAY_BIN, ['cluster', 'get', 'edge-ns', '--output', 'json'], adminEnv);
          return r.code === 0 && JSON.parse(r.stdout).connected === true;
        },
        20_000,
        'edge-ns connected through the proxy',
        200,
      );
      const r = await curlViaRelay(`http://edge-ns.clusters.local:${UPSTREAM_PORT}/`);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('hello from the namespace');
      await sleep(500);
      expect((await fw.allow.counters()).packets).toBeGreaterThan(0);
      expect((await fw.drop.counters()).packets).toBe(0);
      expect(proxy.log()).toContain(`CONNECT ${ns.hostAddress}:${relayPort}`);
    } finally {
      await agent.stop();
      await upstream.stop();
    }
  }, 120_000);
});
