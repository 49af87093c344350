/**
 * The direct path's MTU search with real processes: the relay (`tunnel-relay serve` with its UDP port) on the
 * host side of a veth, the agent (`tunnel-client run`) in a namespace on the other side, an HTTP upstream on
 * the host the agent reaches over the veth, and curl downloading through the relay's CONNECT proxy.
 * - a veth at MTU 9,000: the agent's direct path climbs to jumbo frames (8,920-byte inner packets);
 * - a veth at MTU 1,500: it stays at 1,420 (no probe is ever larger than the first hop carries);
 * - a download on the jumbo link across direct (8,920) -> relayed (65,503) -> direct (1,420, then 8,920
 *   again) switches arrives byte-identical, with no stream error.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  cleanup,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { readAgentStatus, waitForAgentStatus } from './helpers/agent-status.js';
import { cleanupAll } from './helpers/cleanup.js';
import { connectDownload, type Download } from './helpers/connect-download.js';
import { addRule } from './helpers/iptables.js';
import { startNamespaceAgent } from './helpers/namespace-agent.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { execCommand, type ProcessHandle } from './helpers/process.js';
import { writeRelayCaFile } from './helpers/relay-ca-file.js';
import { sampleHandler, sha256OfPattern } from './proxy-fixtures.js';

interface StatusReport {
  connected: boolean;
  path: string;
  pathDetail: { remote: string | null; mtu?: number | null } | null;
}

/** One relay on the host side of a veth at `mtu`, one agent behind it in its namespace, an upstream on the host. */
interface Site {
  ns: Netns;
  relay: Proc;
  ready: ReadyLine;
  caFile: string;
  upstream: http.Server;
  upstreamPort: number;
  stateDir: string;
  agent: ProcessHandle;
  cluster: string;
}

const sites: Site[] = [];

/** Both ends of the namespace's veth (execCommand rejects when `ip` fails). */
async function setMtu(ns: Netns, mtu: number): Promise<void> {
  await execCommand('ip', ['link', 'set', ns.hostIf!, 'mtu', String(mtu)]);
  await ns.exec('ip', ['link', 'set', ns.nsIf!, 'mtu', String(mtu)]);
}

async function site(mtu: number, cluster: string): Promise<Site> {
  const ns = await createNetns('npm', { subnet: 'auto' });
  await setMtu(ns, mtu);
  const hostAddress = ns.hostAddress!;
  const upstream = http.createServer(sampleHandler('pmtu'));
  upstream.listen(0, hostAddress);
  await once(upstream, 'listening');
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const started = await startServe(tempDir('pmtu-relay-'), `${hostAddress}:0`, [
    '--udp-port',
    String(await freeUdpPort(hostAddress)),
  ]);
  const env = adminEnvOf(started.ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', cluster, '--output', 'json'], env);
  expect(created.code, created.stderr).toBe(0);
  const { stateDir, proc: agent } = await startNamespaceAgent(ns, {
    joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand,
    extraArgs: ['--upstream', `http://${hostAddress}:${upstreamPort}`],
    prefix: 'pmtu-agent',
    runTimeoutMs: 200_000,
  });
  const caFile = await writeRelayCaFile(env, cluster, 'pmtu-ca');
  const s: Site = {
    ns,
    relay: started.proc,
    ready: started.ready,
    caFile,
    upstream,
    upstreamPort,
    stateDir,
    agent,
    cluster,
  };
  sites.push(s);
  return s;
}

const status = (s: Site) => readAgentStatus<StatusReport>(s.stateDir);

/** Polls the site's agent status until `pred` holds; returns the ms it took. */
async function until(what: string, s: Site, pred: (r: StatusReport) => boolean, ms: number): Promise<number> {
  return (await waitForAgentStatus({ stateDir: s.stateDir, what, until: pred, timeoutMs: ms })).elapsedMs;
}

/** curl through the relay's CONNECT proxy to the site's upstream: `n` pattern bytes, hashed as they arrive. */
function download(s: Site, n: number, limitRate?: string): Download {
  return connectDownload({
    proxyUrl: s.ready.url,
    caFile: s.caFile,
    adminKey: s.ready.adminKey ?? '',
    url: `http://${s.cluster}.clusters.local:${s.upstreamPort}/bytes?n=${n}`,
    limitRate,
    killAfterMs: 120_000,
  });
}

const direct = (r: StatusReport) => r.connected && r.path === 'direct';

let jumbo: Site;
let standard: Site;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'iptables']);
  buildIfStale();
  jumbo = await site(9_000, 'edge-jumbo');
  standard = await site(1_500, 'edge-std');
  await until('jumbo direct', jumbo, direct, 30_000);
  await until('standard direct', standard, direct, 30_000);
}, 120_000);

afterAll(async () => {
  for (const s of sites) {
    await s.agent.stop();
    await s.relay.stop();
    s.upstream.close();
    await s.ns.destroy();
  }
  await cleanup();
  await cleanupAll();
});

describe('direct path MTU search, real processes over a veth', () => {
  it('a veth at MTU 9,000 goes up to jumbo frames; one at 1,500 stays at 1,420', async () => {
    const took = await until('jumbo MTU', jumbo, (r) => direct(r) && r.pathDetail?.mtu === 8_920, 15_000);
    console.log(`direct-path pmtu: 9,000-byte veth reached 8,920 in ${took} ms (status tick included)`);
    // Traffic on the 1,500 link: the search never raises it.
    const dl = await download(standard, 20 * 1024 * 1024).done;
    expect(dl.code, dl.stderr).toBe(0);
    expect(dl.sha256).toBe(sha256OfPattern(20 * 1024 * 1024));
    const r = await status(standard);
    expect(r.path).toBe('direct');
    expect(r.pathDetail?.mtu).toBe(1_420);
  }, 60_000);

  it('a download across direct (jumbo) -> relayed -> direct switches arrives byte-identical', async () => {
    const n = 60 * 1024 * 1024;
    await until('jumbo MTU', jumbo, (r) => direct(r) && r.pathDetail?.mtu === 8_920, 15_000);
    const dl = download(jumbo, n, '3M');
    await sleep(2_000);
    expect(dl.received()).toBeGreaterThan(0);

    const block = await addRule(jumbo.ns.name, 'OUTPUT', ['-p', 'udp', '!', '-o', 'lo'], 'DROP', {
      insert: true,
    });
    await until('relayed', jumbo, (r) => r.path === 'relayed' && r.pathDetail?.mtu === 65_503, 20_000);
    const atFallback = dl.received();
    await sleep(2_000);
    await block.remove();
    await until('direct again', jumbo, direct, 30_000);
    await until('jumbo again', jumbo, (r) => direct(r) && r.pathDetail?.mtu === 8_920, 15_000);
    const atUpgrade = dl.received();

    const r = await dl.done;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.bytes).toBe(n);
    expect(r.sha256).toBe(sha256OfPattern(n));
    expect(atUpgrade).toBeGreaterThan(atFallback);
    expect(atUpgrade).toBeLessThan(n);
  }, 120_000);
});
