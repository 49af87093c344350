/**
 * tunnel-bench's namespace rows: a relay (`tunnel-relay serve` with its UDP port) on the host side of a veth at
 * MTU 1,500, and behind it, in a network namespace, a byte source and two `tunnel-client` agents serving it: one
 * that goes direct (WireGuard over UDP across the veth) and one with `--egress 443-only` (relayed over its TLS
 * WebSocket). Both are reached through the relay's CONNECT proxy, so the two rows differ only in the path the
 * agent's WireGuard takes. Needs root and iproute2 (createNetns from test/helpers).
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { createNetns, type Netns } from '../test/helpers/netns.js';
import {
  CLIENT_BIN,
  connectVia,
  type Dial,
  firstLine,
  pipelinedDownload,
  RELAY_BIN,
  runJson,
  start,
  UPSTREAM_SRC,
} from './tunnel-fixture.js';

export interface NamespaceAgent {
  /** CONNECT through the relay to this agent's byte source. */
  dial: Dial;
  /** bulk-child.ts arguments for a download through the same path. */
  bulkArgs: string[];
  /** A download on a new CONNECT, resumed TLS, the GET sent with the CONNECT (tunnel-fixture.ts). */
  pipelined: (bytes: number) => Promise<number>;
  agent: ChildProcess;
}

export interface NamespaceSite {
  ns: Netns;
  relay: ChildProcess;
  direct: NamespaceAgent;
  relayed: NamespaceAgent;
  /** The direct agent's path MTU towards the hub as its status reports it (inner bytes). */
  directMtu(): number | null;
  /** The hub's view of the direct agent: its path and when the hub last switched it (cluster API). */
  directView(): Promise<{ path: string; lastSwitch: string | null }>;
}

const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

export async function freeUdpPort(host: string): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, host, () => r()));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A Node process inside the namespace (the pid is node's: `ip netns exec` execs it). */
export function startIn(ns: Netns, args: string[]): ChildProcess {
  return start('ip', ['netns', 'exec', ns.name, process.execPath, ...NODE_ARGS, ...args]);
}

/** The agent's status file: its path, and the direct path's MTU and remote endpoint. */
export interface AgentPathStatus {
  path?: string;
  pathDetail?: { mtu?: number | null; remote?: string | null };
}

export function agentStatus(stateDir: string): AgentPathStatus {
  const out = execFileSync(
    process.execPath,
    [CLIENT_BIN, 'status', '--state-dir', stateDir, '--output', 'json'],
    // STATE_MISSING on stderr until the agent has joined
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return JSON.parse(out) as AgentPathStatus;
}

export async function waitFor(what: string, cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (cond()) return;
    } catch {
      // status.json being rewritten
    }
    if (Date.now() > end) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface SiteRelay {
  url: string;
  adminKey: string;
  ca: string;
  caFile: string;
}

/** Creates the cluster and returns its join arguments (the `tunnel-client` command line less its name). */
export async function createCluster(name: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const created = await runJson(['cluster', 'create', name], env);
  return joinCommandWords((created.bootstrap as { joinCommand: string }).joinCommand);
}

/** The relay's CA certificate, from a cluster's kubeconfig. */
export async function relayCa(name: string, env: NodeJS.ProcessEnv): Promise<string> {
  const kc = await runJson(['kubeconfig', name], env);
  const data =
    (kc.clusters as Array<{ cluster: Record<string, string> }>)[0]?.cluster['certificate-authority-data'] ??
    '';
  return Buffer.from(data, 'base64').toString();
}

export function joinAgent(
  ns: Netns,
  relay: SiteRelay,
  o: { name: string; joinArgs: string[]; upPort: number; dir: string; extra: string[] },
): NamespaceAgent & { stateDir: string } {
  const joinArgs = o.joinArgs;
  const stateDir = join(o.dir, o.name);
  const agent = startIn(ns, [
    ...NODE_FLAGS,
    CLIENT_BIN,
    ...joinArgs,
    '--upstream',
    `http://127.0.0.1:${o.upPort}`,
    '--state-dir',
    stateDir,
    ...o.extra,
  ]);
  const target = `${o.name}.clusters.local:${o.upPort}`;
  return {
    agent,
    stateDir,
    dial: connectVia(relay.url, relay.ca, relay.adminKey, target),
    pipelined: pipelinedDownload(relay.url, relay.ca, relay.adminKey, target),
    bulkArgs: ['via', relay.url, relay.caFile, relay.adminKey, target],
  };
}

/** Starts the namespace, the relay, the byte source and both agents; resolves once one is direct, one relayed. */
export async function startNamespaceSite(dir: string, mtu = 1_500): Promise<NamespaceSite> {
  const ns = await createNetns('tbn', { subnet: 'auto' });
  execFileSync('ip', ['link', 'set', ns.hostIf ?? '', 'mtu', String(mtu)]);
  await ns.exec('ip', ['link', 'set', ns.nsIf ?? '', 'mtu', String(mtu)]);
  const host = ns.hostAddress ?? '';
  const relay = start(process.execPath, [
    ...NODE_ARGS,
    RELAY_BIN,
    'serve',
    '--output',
    'json',
    '--listen',
    `${host}:0`,
    '--data-dir',
    join(dir, 'ns-relay'),
    '--udp-port',
    String(await freeUdpPort(host)),
    '--stun-port',
    'off',
    '--log-level',
    'warn',
  ]);
  const ready = JSON.parse(await firstLine(relay)) as { url: string; caPin: string; adminKey: string };
  const env = {
    ...process.env,
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: ready.adminKey,
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  };
  const up = startIn(ns, ['-e', UPSTREAM_SRC]);
  const upPort = Number(await firstLine(up));
  const directJoin = await createCluster('nsdirect', env);
  const relayedJoin = await createCluster('nsrelayed', env);
  const ca = await relayCa('nsdirect', env);
  const caFile = join(dir, 'ns-relay-ca.pem');
  writeFileSync(caFile, ca);
  const site: SiteRelay = { url: ready.url, adminKey: ready.adminKey, ca, caFile };
  const d = joinAgent(ns, site, { name: 'nsdirect', joinArgs: directJoin, upPort, dir, extra: [] });
  const r = joinAgent(ns, site, {
    name: 'nsrelayed',
    joinArgs: relayedJoin,
    upPort,
    dir,
    extra: ['--egress', '443-only'],
  });
  await waitFor('direct agent on the direct path', () => agentStatus(d.stateDir).path === 'direct', 60_000);
  await waitFor('443-only agent connected', () => agentStatus(r.stateDir).path === 'relayed', 60_000);
  return {
    ns,
    relay,
    direct: d,
    relayed: r,
    directMtu: () => agentStatus(d.stateDir).pathDetail?.mtu ?? null,
    directView: async () => {
      const c = await runJson(['cluster', 'get', 'nsdirect'], env);
      const detail = c.pathDetail as { lastSwitch?: string | null } | null;
      return { path: String(c.path), lastSwitch: detail?.lastSwitch ?? null };
    },
  };
}
