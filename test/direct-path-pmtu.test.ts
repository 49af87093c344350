/**
 * The direct path's MTU search with real processes: the relay (`tunnel-relay serve` with its UDP port) on the
 * host side of a veth, the agent (`tunnel-client run`) in a namespace on the other side, an HTTP upstream on
 * the host the agent reaches over the veth, and curl downloading through the relay's CONNECT proxy.
 * - a veth at MTU 9,000: the agent's direct path climbs to jumbo frames (8,920-byte inner packets);
 * - a veth at MTU 1,500: it stays at 1,420 (no probe is ever larger than the first hop carries);
 * - a download on the jumbo link across direct (8,920) -> relayed (65,503) -> direct (1,420, then 8,920
 *   again) switches arrives byte-identical, with no stream error.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/node-flags.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
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
import { cleanupAll } from './helpers/cleanup.js';
import { addRule } from './helpers/iptables.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { execCommand, type ProcessHandle } from './helpers/process.js';
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
  const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const stateDir = join(tempDir('pmtu-agent-'), 'state');
  const joined = await ns.exec(
    process.execPath,
    [
      ...NODE_FLAGS,
      CLIENT_BIN,
      ...args,
      '--state-dir',
      stateDir,
      '--upstream',
      `http://${hostAddress}:${upstreamPort}`,
      '--wait',
    ],
    { timeoutMs: 40_000 },
  );
  expect(joined.stderr).not.toMatch(/error/i);
  const agent = ns.spawn(process.execPath, [...NODE_FLAGS, CLIENT_BIN, 'run', '--state-dir', stateDir], {
    timeoutMs: 200_000,
  });
  const k = await run(RELAY_BIN, ['kubeconfig', cluster, '--output', 'json'], env);
  expect(k.code, k.stderr).toBe(0);
  const caFile = join(tempDir('pmtu-ca-'), 'relay-ca.pem');
  const ca = JSON.parse(k.stdout).clusters[0].cluster['certificate-authority-data'] as string;
  writeFileSync(caFile, Buffer.from(ca, 'base64'));
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

async function status(s: Site): Promise<StatusReport> {
  const r = await run(CLIENT_BIN, ['status', '--state-dir', s.stateDir, '--output', 'json'], cleanEnv());
  return JSON.parse(r.stdout) as StatusReport;
}

async function until(what: string, s: Site, pred: (r: StatusReport) => boolean, ms: number): Promise<number> {
  const start = Date.now();
  let last: StatusReport | undefined;
  for (;;) {
    try {
      last = await status(s);
      if (pred(last)) return Date.now() - start;
    } catch {
      // status.json being rewritten
    }
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await sleep(200);
  }
}

/** curl through the relay's CONNECT proxy to the site's upstream: `n` pattern bytes, hashed as they arrive. */
function download(s: Site, n: number, limitRate?: string) {
  const args = [
    '-sS',
    '-p',
    '-x',
    s.ready.url,
    '--proxy-cacert',
    s.caFile,
    '--proxy-header',
    `Proxy-Authorization: Bearer ${s.ready.adminKey}`,
    ...(limitRate ? ['--limit-rate', limitRate] : []),
    `http://${s.cluster}.clusters.local:${s.upstreamPort}/bytes?n=${n}`,
  ];
  const c = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const h = createHash('sha256');
  let bytes = 0;
  let stderr = '';
  c.stdout.on('data', (d: Buffer) => {
    bytes += d.length;
    h.update(d);
  });
  c.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<{ code: number | null; stderr: string; bytes: number; sha256: string }>(
    (resolve) => {
      const timer = setTimeout(() => c.kill('SIGKILL'), 120_000);
      c.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr, bytes, sha256: h.digest('hex') });
      });
    },
  );
  return { received: () => bytes, done };
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
