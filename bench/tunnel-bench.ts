/**
 * Hub -> agent tunnel benchmark against an SSH reverse tunnel, in one run:
 *  (a) bulk download over one stream and over 16 parallel streams: direct TCP to a byte source, through
 *      a wireguard-go pair between two network namespaces (bench/baselines/wireguard-go.ts), through
 *      `ssh -R` (the agent's role played by an ssh client dialing a local sshd on loopback; the download
 *      enters at sshd's forwarded port), through the relay's CONNECT proxy to a `tunnel-client` agent, and
 *      (as root) to two agents in a network namespace behind a veth at MTU 1,500 (bench/netns-agents.ts): one
 *      on the direct path (WireGuard over UDP), one `--egress 443-only` (relayed);
 *  (b) latency and fairness: p50/p99 of small requests (a new connection each, 100-byte answer) and of
 *      100-byte round trips on one established connection, directly, through the relay (and the namespace
 *      agents) and through ssh -R, each with and without one bulk stream saturating the same path;
 *  (b2) a new connection per request, every way sampled in turns, beside two baselines of what any Node proxy
 *      pays: a CONNECT proxy on Node's https server with no tunnel (bench/baselines/node-connect-proxy.ts) and
 *      the same on plain http;
 *  (b3) the CPU each of those ways costs the tunnel's two processes (relay and agent; sshd and ssh) per connection.
 * Then the namespace direct agent's path flips (bench/path-flips.ts: its UDP silenced and allowed again during
 * a download) and the direct path's targets: one stream >= 2x the wireguard-go pair, added p99 <= relayed,
 * fallback <= 3 s and upgrade <= 10 s.
 * Real binaries (`tunnel-relay serve`, `tunnel-client join`, /usr/sbin/sshd, ssh). sshd runs with a
 * throw-away host key and a throw-away user key in a temp dir, only that key accepted, loopback only;
 * it needs root (it is skipped with a note otherwise) and `openssh-server` installed.
 * `node dist/bench/tunnel-bench.js [MiB per bulk download, default 256] [small-request samples, default 1000]
 * [rounds of (a), default 3] [--throughput-only | --new-connections-only]` (the last two: (a) only, (b2) and
 * (b3) only).
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSelfSignedCert } from '../relay/ops/tls/self-signed.js';
import { defaultAead } from '../shared/net/wireguard/crypto/aead.js';
import { cleanupAll } from '../test/helpers/cleanup.js';
import { type NodeConnectProxy, startNodeConnectProxy } from './baselines/node-connect-proxy.js';
import { measureWireguardGoPair } from './baselines/wireguard-go.js';
import { stopChildren } from './bench-child.js';
import { describeMachine } from './machine.js';
import { type NamespaceSite, startNamespaceSite } from './netns-agents.js';
import { type FlipTimes, measureFlips } from './path-flips.js';
import { measurePrimitives } from './primitive-costs.js';
import {
  measureInRounds,
  median,
  printThroughput,
  type RoundFigures,
  type ThroughputPath,
} from './throughput-rounds.js';
import {
  children,
  connectVia,
  type Dial,
  direct,
  download,
  echoPipe,
  freePort,
  latency,
  latencyInTurns,
  pathProxyGet,
  pipelinedDownload,
  procCpu,
  type Quantiles,
  start,
  startBenchAgent,
  startRelayAndUpstream,
  warmUp,
} from './tunnel-fixture.js';

const MB = Number(process.argv[2] ?? '256');
const SAMPLES = Number(process.argv[3] ?? '1000');
/** Rounds of the throughput rows of (a). */
const ROUNDS = Number(process.argv[4] ?? '3');
/** `--throughput-only`: the rows of (a) and nothing else (an A/B of two builds, run after each other in turns). */
const THROUGHPUT_ONLY = process.argv.includes('--throughput-only');
/** `--new-connections-only`: table (b2) and nothing else (an A/B of new-connection latency). */
const NEW_CONNECTIONS_ONLY = process.argv.includes('--new-connections-only');
const SSHD = '/usr/sbin/sshd';
const BULK_CHILD = join(dirname(fileURLToPath(import.meta.url)), 'bulk-child.js');
/** Streams of the parallel bulk download. */
const PARALLEL = 16;
/**
 * Each latency row is measured after this long of the same requests: in a 5,000-sample idle run every slow
 * sample fell in the first ~1.8 s (JIT, caches), so 3 s keeps warm-up out of the p99.
 */
const WARM_MS = 3000;

/** One download of MB MiB on one stream and MB MiB over PARALLEL streams; CPU of `pids` on the first. */
async function oneRound(dial: Dial, pids: (number | undefined)[]): Promise<RoundFigures> {
  const c0 = pids.reduce<number>((a, p) => a + treeCpu(p), 0);
  let t0 = performance.now();
  const got = await download(dial, MB * 1024 * 1024);
  const one = got / 1e6 / ((performance.now() - t0) / 1000);
  const cpu = pids.reduce<number>((a, p) => a + treeCpu(p), 0) - c0;
  const each = Math.floor((MB * 1024 * 1024) / PARALLEL);
  t0 = performance.now();
  const parts = await Promise.all(Array.from({ length: PARALLEL }, () => download(dial, each)));
  const many = parts.reduce((a, b) => a + b, 0) / 1e6 / ((performance.now() - t0) / 1000);
  return { one, many, cpuPerGiB: pids.length > 0 ? (cpu * 1024) / MB : Number.NaN };
}

/** A difference in ms with its sign: +0.50, -0.74. */
const signed = (n: number): string => `${n < 0 ? '-' : '+'}${Math.abs(n).toFixed(2)}`;

/**
 * One round of the baseline wireguard-go pair (bench/baselines/wireguard-go.ts: two namespaces joined by a veth,
 * wireguard-go in each, a Node sender and receiver, set up afresh each round) moving MB MiB over 1 and PARALLEL
 * connections.
 */
async function wireguardGoRound(): Promise<RoundFigures> {
  const r = await measureWireguardGoPair(MB * 1024 * 1024, '10.209.251.0/24', PARALLEL);
  const mbps = (t: { bytes: number; seconds: number }): number => t.bytes / 1e6 / t.seconds;
  return {
    one: mbps(r.tunnel),
    many: r.tunnelParallel ? mbps(r.tunnelParallel) : Number.NaN,
    cpuPerGiB: Number.NaN,
  };
}

/** Whether the wireguard-go pair can run here (root, /dev/net/tun, the tools); a note when not. */
async function wireguardGoRuns(): Promise<boolean> {
  try {
    await measureWireguardGoPair(8 * 1024 * 1024, '10.209.251.0/24', 1);
    return true;
  } catch (err) {
    console.log(`(wireguard-go pair skipped: ${(err as Error).message})`);
    return false;
  }
}

/**
 * One endless download in its own process (bench/bulk-child.ts) until stop(); stop() resolves with the MB/s it
 * got meanwhile. `args` are bulk-child's: `direct <port>` or `via <url> <caFile> <key> <target>`.
 */
async function saturate(args: string[]): Promise<() => Promise<number>> {
  const c = start(process.execPath, [BULK_CHILD, ...args]);
  let out = '';
  c.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  for (let i = 0; !out.includes('ready'); i++) {
    if (i > 200 || c.exitCode !== null) throw new Error('bulk download did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 1500)); // let it reach full speed
  return async () => {
    c.kill('SIGTERM');
    await once(c, 'exit');
    return Number(out.split('\n')[1]);
  };
}

/** sshd on loopback with throw-away keys, and `ssh -N -R` forwarding sshd's `remotePort` to the byte source. */
async function sshReverse(
  dir: string,
  upPort: number,
): Promise<{ port: number; pids: (number | undefined)[] }> {
  const d = join(dir, 'ssh');
  mkdirSync(d, { mode: 0o700 });
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // privilege separation directory
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(d, 'host_key')]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(d, 'user_key')]);
  writeFileSync(join(d, 'authorized_keys'), readFileSync(join(d, 'user_key.pub')), { mode: 0o600 });
  const sshPort = await freePort();
  const port = await freePort();
  writeFileSync(
    join(d, 'sshd_config'),
    [
      `ListenAddress 127.0.0.1:${sshPort}`,
      `HostKey ${join(d, 'host_key')}`,
      `AuthorizedKeysFile ${join(d, 'authorized_keys')}`,
      `PidFile ${join(d, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'AllowTcpForwarding remote',
      'GatewayPorts no',
      'X11Forwarding no',
      'PermitTTY no',
      'LogLevel ERROR',
    ].join('\n'),
  );
  const sshd = start(SSHD, ['-D', '-e', '-f', join(d, 'sshd_config')]);
  await new Promise((r) => setTimeout(r, 500));
  const ssh = start('ssh', [
    '-N',
    '-i',
    join(d, 'user_key'),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    `UserKnownHostsFile=${join(d, 'known_hosts')}`,
    '-o',
    'ExitOnForwardFailure=yes',
    '-o',
    'BatchMode=yes',
    '-p',
    String(sshPort),
    '-R',
    `127.0.0.1:${port}:127.0.0.1:${upPort}`,
    'root@127.0.0.1',
  ]);
  for (let i = 0; ; i++) {
    try {
      await download(direct(port), 10);
      break;
    } catch {
      if (i > 50 || ssh.exitCode !== null) throw new Error('ssh -R did not come up');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // The per-connection sshd child does the forwarding; count the listener and the ssh client.
  return { port, pids: [sshd.pid, ssh.pid] };
}

/** CPU of a process and its children (sshd forks one per connection), from /proc (Linux). */
function treeCpu(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let total = procCpu(pid);
  try {
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
      if (task) total += treeCpu(Number(task));
    }
  } catch {
    // no children file: the process alone
  }
  return total;
}

/** The namespace agents (direct and relayed), or undefined with a note when the machine cannot. */
async function namespaceSite(dir: string): Promise<NamespaceSite | undefined> {
  if (process.getuid?.() !== 0) {
    console.log('(namespace agents skipped: need root)');
    return undefined;
  }
  try {
    return await startNamespaceSite(dir);
  } catch (err) {
    console.log(`(namespace agents skipped: ${(err as Error).message})`);
    return undefined;
  }
}

/** The direct path's targets from the issue, with the figures they compare. */
function directTargets(o: {
  wgOne: number | undefined;
  /** The direct namespace agent's one-stream MB/s (median of the rounds of (a)). */
  directOne: number;
  /** Direct TCP's idle p99 is the base the added p99s are taken from. */
  idle: Map<string, { p50: number; p99: number }>;
  busy: Map<string, { p50: number; p99: number }>;
  /** Idle established round trips on the two namespace agents, sampled in turns (latencyInTurns). */
  inTurns: { direct: Quantiles; relayed: Quantiles } | undefined;
  mtu: number | null;
  flips: FlipTimes[];
}): void {
  const base = o.idle.get('direct TCP');
  const line = (what: string, got: string, met: boolean): void =>
    console.log(`| ${what} | ${got} | ${met ? 'met' : 'NOT met'} |`);
  console.log(
    `\n(d) direct-path targets (agent's direct path MTU during the run: ${o.mtu ?? '-'} inner bytes)`,
  );
  console.log('| target | measured | |');
  console.log('|---|---|---|');
  if (o.wgOne !== undefined) {
    const ratio = o.directOne / o.wgOne;
    line(
      'one stream direct >= 2x the wireguard-go pair',
      `${o.directOne.toFixed(1)} / ${o.wgOne.toFixed(1)} MB/s = ${ratio.toFixed(2)}x (medians of (a))`,
      ratio >= 2,
    );
  }
  const turns = o.inTurns;
  if (turns) {
    const f = (q: Quantiles): string => `${q.p50.toFixed(2)} / ${q.p99.toFixed(2)}`;
    line(
      `p99 latency, direct <= relayed (idle, established connection, ${IN_TURNS_SAMPLES} samples each taken in turns, ${IN_TURNS_PAUSE_MS} ms apart)`,
      `p50 / p99 direct ${f(turns.direct)} ms, relayed ${f(turns.relayed)} ms`,
      turns.direct.p99 <= turns.relayed.p99,
    );
  }
  for (const [label, m] of [
    ['idle, one path after the other', o.idle],
    ['next to a bulk stream', o.busy],
  ] as const) {
    const d = m.get(NS_DIRECT);
    const r = m.get(NS_RELAYED);
    if (!d || !r || !base) continue;
    const added = (x: { p99: number }): number => x.p99 - base.p99;
    line(
      `added p99 latency, direct <= relayed (${label}, established connection)`,
      `direct ${signed(added(d))} ms, relayed ${signed(added(r))} ms`,
      added(d) <= added(r),
    );
  }
  if (o.flips.length > 0) {
    const each = (pick: (f: FlipTimes) => number) =>
      o.flips.map((f) => (pick(f) / 1000).toFixed(2)).join(' / ');
    const worst = (pick: (f: FlipTimes) => number) => Math.max(...o.flips.map(pick));
    line(
      'fallback <= 3 s after the direct path goes silent (hub switch, during a download)',
      `${each((f) => f.fallbackMs)} s`,
      worst((f) => f.fallbackMs) <= 3_000,
    );
    line(
      'upgrade <= 10 s after UDP returns (hub switch, during a download)',
      `${each((f) => f.upgradeMs)} s`,
      worst((f) => f.upgradeMs) <= 10_000,
    );
  }
}

/**
 * Samples of each path in the idle comparison of the namespace agents. A p99 rests on its slowest 1 %: from
 * 2,000 samples that is 20, and the two paths' p99s then moved by up to 0.17 ms either way from run to run
 * (machine noise, visible on both paths at the same moments).
 */
const IN_TURNS_SAMPLES = Math.max(SAMPLES, 10_000);
/**
 * Pause between two round trips taken in turns (~30 s for 2 x 10,000). Both agents share the relay and the two
 * cores: without it a round trip on one path often began while relay and the other agent were still at the
 * other path's last one (the relayed path's hub acknowledges each reply at once, and its agent wakes up to read
 * that), which no agent meets in use. Four runs without a pause: p99s 0.00-0.04 ms apart either way while each
 * path alone (the rows of (b)) was 0.15-0.54 ms apart in the direct path's favour.
 */
const IN_TURNS_PAUSE_MS = 1;

/**
 * Idle round trips on one established connection through each namespace agent, direct and relayed, sampled in
 * turns: the rows of (b) measure one path after the other, so their p99s also differ by when each ran.
 */
async function namespaceLatencyInTurns(
  site: NamespaceSite,
): Promise<{ direct: Quantiles; relayed: Quantiles }> {
  const direct = await echoPipe(site.direct.dial);
  const relayed = await echoPipe(site.relayed.dial);
  try {
    const both = [() => direct.rtt(), () => relayed.rtt()];
    await warmUp(() => Promise.all(both.map((fn) => fn())), WARM_MS);
    const [d, r] = await latencyInTurns(both, IN_TURNS_SAMPLES, IN_TURNS_PAUSE_MS);
    if (!d || !r) throw new Error('no samples');
    return { direct: d, relayed: r };
  } finally {
    direct.close();
    relayed.close();
  }
}

/** One way of opening a new connection per 100-byte request, for the in-turns table (b2). */
interface FreshWay {
  name: string;
  get: () => Promise<unknown>;
  /** The tunnel's two processes (relay and agent, or sshd and ssh) whose CPU (b3) charges to the way. */
  pids?: readonly [number | undefined, number | undefined];
}

/** Connections per way in (b3): at 2-6 ms of CPU each, 300 give 0.6-1.8 s, against /proc's 10 ms ticks. */
const CPU_SAMPLES = 300;

/**
 * (b3) CPU per new connection of the tunnel's two processes, one way after the other (CPU_SAMPLES connections
 * each, after (b2)'s warm-up): what a new connection costs the relay and the agent, against sshd and ssh.
 */
async function newConnectionCpu(ways: FreshWay[]): Promise<void> {
  console.log(
    `\n(b3) CPU ms per new connection of the tunnel's two processes, ${CPU_SAMPLES} connections of each way` +
      ` one after the other (load average at the start: ${loadAverage()})`,
  );
  console.log('| way | relay (sshd; floor proxy) ms | agent (ssh) ms | both ms | wall ms per connection |');
  console.log('|---|---|---|---|---|');
  for (const w of ways) {
    if (!w.pids) continue;
    const [server, agent] = w.pids;
    // Trees: sshd forks a process per ssh connection, which does the forwarding.
    const cpu = () => [server, agent].map((pid) => treeCpu(pid) * 1000);
    const before = cpu();
    const started = performance.now();
    for (let i = 0; i < CPU_SAMPLES; i++) await w.get();
    const wall = (performance.now() - started) / CPU_SAMPLES;
    const [s, a] = cpu().map((after, i) => (after - (before[i] ?? 0)) / CPU_SAMPLES);
    const f = (x: number | undefined) => (x ?? 0).toFixed(2);
    console.log(`| ${w.name} | ${f(s)} | ${f(a)} | ${f((s ?? 0) + (a ?? 0))} | ${wall.toFixed(2)} |`);
  }
}

/**
 * (b2) A new connection per request (GET of 100 bytes), every way sampled in turns so that all meet the same
 * machine noise: direct TCP and `ssh -R` as the baselines; CONNECT with a full TLS handshake and a GET sent after
 * the 200 (as (b)); with a resumed TLS session; and resumed with the GET sent right behind the CONNECT head (the
 * relay sends it with the stream open).
 */
async function newConnections(ways: FreshWay[]): Promise<void> {
  console.log(
    `\n(b2) a new connection per 100-byte GET, ${SAMPLES} samples of each way taken in turns after ${WARM_MS} ms` +
      ` of the same (load average at the start: ${loadAverage()})`,
  );
  console.log('| way | p50 ms | p90 ms | p99 ms | p50 / ssh -R p50 |');
  console.log('|---|---|---|---|---|');
  await warmUp(async () => {
    for (const w of ways) await w.get();
  }, WARM_MS);
  const q = await latencyInTurns(
    ways.map((w) => w.get),
    SAMPLES,
  );
  const ssh = ways.findIndex((w) => w.name === 'ssh -R');
  const base = ssh >= 0 ? q[ssh]?.p50 : undefined;
  ways.forEach((w, i) => {
    const x = q[i];
    if (!x) return;
    const ratio = base ? `${(x.p50 / base).toFixed(2)}x` : '-';
    console.log(`| ${w.name} | ${x.p50.toFixed(2)} | ${x.p90.toFixed(2)} | ${x.p99.toFixed(2)} | ${ratio} |`);
  });
}

/** What the ways of opening a new connection go through. */
interface FreshWaysOptions {
  ready: { url: string; adminKey: string };
  ca: string;
  upPort: number;
  ssh: { port: number; pids: (number | undefined)[] } | undefined;
  site: NamespaceSite | undefined;
  via: Dial;
  /** The relay's and the agent's pids. */
  tunnel: readonly [number | undefined, number | undefined];
}

/** Tables (b2) and (b3), with the floor's proxy started for them in `dir`. */
async function newConnectionTables(o: FreshWaysOptions, dir: string): Promise<void> {
  const floor = {
    tls: await startNodeConnectProxy(dir, o.upPort),
    plain: await startNodeConnectProxy(dir, o.upPort, { plain: true }),
  };
  const ways = freshWays({ ...o, floor });
  await newConnections(ways);
  await newConnectionCpu(ways);
}

/** The ways of opening a new connection that (b2) samples in turns and (b3) one after the other. */
function freshWays(
  o: FreshWaysOptions & {
    /** The floor: a CONNECT proxy on Node's own TLS and HTTP, without a tunnel; and the same on plain http. */
    floor: { tls: NodeConnectProxy; plain: NodeConnectProxy };
  },
): FreshWay[] {
  const { ready, ca, upPort, ssh, site, via, tunnel, floor } = o;
  const target = `bench.clusters.local:${upPort}`;
  const ways: FreshWay[] = [{ name: 'direct TCP', get: () => download(direct(upPort), 100) }];
  if (ssh)
    ways.push({
      name: 'ssh -R',
      get: () => download(direct(ssh.port), 100),
      pids: [ssh.pids[0], ssh.pids[1]],
    });
  for (const [name, proxy] of [
    [NODE_PROXY_PLAIN, floor.plain],
    [NODE_PROXY_FLOOR, floor.tls],
  ] as const) {
    const get = pipelinedDownload(proxy.url, proxy.ca, proxy.token, target);
    ways.push({ name, get: () => get(100), pids: [proxy.process.pid, undefined] });
  }
  const resumed = connectVia(ready.url, ca, ready.adminKey, target, { resume: true });
  const early = pipelinedDownload(ready.url, ca, ready.adminKey, target);
  const pathGet = pathProxyGet(ready.url, ca, ready.adminKey, 'bench');
  ways.push(
    { name: 'CONNECT, full TLS handshake, GET after the 200', get: () => download(via, 100), pids: tunnel },
    { name: 'CONNECT, resumed TLS, GET after the 200', get: () => download(resumed, 100), pids: tunnel },
    { name: 'CONNECT, resumed TLS, GET sent with the CONNECT', get: () => early(100), pids: tunnel },
    { name: 'path proxy GET, resumed TLS', get: () => pathGet(100), pids: tunnel },
  );
  if (site)
    ways.push({
      name: `${NS_DIRECT}, resumed, GET with the CONNECT`,
      get: () => site.direct.pipelined(100),
      pids: [site.relay.pid, site.direct.agent.pid],
    });
  return ways;
}

/** The 1-minute load average, as `uptime` prints it. */
function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Path flips of the direct agent measured after the latency rows (bench/path-flips.ts). */
const FLIP_ROUNDS = 3;

const NS_DIRECT = 'CONNECT, netns agent, direct UDP (veth MTU 1,500)';
const NODE_PROXY_FLOOR = 'Node https CONNECT proxy, no tunnel (the floor), resumed TLS, GET with the CONNECT';
const NODE_PROXY_PLAIN = 'Node http CONNECT proxy, no tunnel, no TLS, GET with the CONNECT';
const DIRECT_TCP = 'direct TCP';
const VIA_RELAY = 'CONNECT via relay + agent';
const SSH_R = 'ssh -R';
const WG_GO = 'wireguard-go pair, two namespaces';
const NS_RELAYED = 'CONNECT, netns agent, relayed (443-only)';

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tunnel-bench-'));
  try {
    console.log(`machine: ${describeMachine()}`);
    const { relay, ready, upPort, env } = await startRelayAndUpstream(dir);
    const { agent, ca } = await startBenchAgent(env, dir, upPort);
    const via = connectVia(ready.url, ca, ready.adminKey, `bench.clusters.local:${upPort}`);

    const canSsh = process.getuid?.() === 0 && existsSync(SSHD);
    const ssh = canSsh ? await sshReverse(dir, upPort) : undefined;
    if (!ssh) console.log('(ssh -R skipped: needs root and openssh-server)');

    if (NEW_CONNECTIONS_ONLY) {
      const site = await namespaceSite(dir);
      return await newConnectionTables(
        { ready, ca, upPort, ssh, site, via, tunnel: [relay.pid, agent.pid] },
        dir,
      );
    }
    const wgRuns = await wireguardGoRuns();
    const site = await namespaceSite(dir);
    const bulkPaths: ThroughputPath[] = [{ name: DIRECT_TCP, round: () => oneRound(direct(upPort), []) }];
    if (wgRuns) bulkPaths.push({ name: WG_GO, round: wireguardGoRound });
    if (ssh) bulkPaths.push({ name: SSH_R, round: () => oneRound(direct(ssh.port), ssh.pids) });
    bulkPaths.push({ name: VIA_RELAY, round: () => oneRound(via, [relay.pid, agent.pid]) });
    if (site) {
      // The agents have just started: on the direct path the first 64 MiB after the start ran at a third to a half
      // of the later ones' rate (code not yet optimised by the JIT, and the in-flight cap holds a lower rate).
      await download(site.direct.dial, MB * 1024 * 1024);
      await download(site.relayed.dial, MB * 1024 * 1024);
      bulkPaths.push({
        name: NS_DIRECT,
        round: () => oneRound(site.direct.dial, [site.relay.pid, site.direct.agent.pid]),
      });
      bulkPaths.push({
        name: NS_RELAYED,
        round: () => oneRound(site.relayed.dial, [site.relay.pid, site.relayed.agent.pid]),
      });
    }
    console.log(
      `\n(a) bulk download of ${MB} MiB over one stream and over ${PARALLEL} parallel streams, in ${ROUNDS} rounds` +
        ' (every path once a round, the order reversed every other round; ratios taken within each round),' +
        ' median (lowest-highest) over the rounds; MB/s = 10^6 B/s; CPU s per GiB of the tunnel processes on one' +
        ` stream (load average at the start: ${loadAverage()})`,
    );
    const figs = await measureInRounds(bulkPaths, ROUNDS);
    printThroughput(figs, { direct: DIRECT_TCP, ssh: SSH_R });
    if (THROUGHPUT_ONLY) return;
    const medianOf = (name: string, pick: (f: RoundFigures) => number): number | undefined => {
      const f = figs.find((x) => x.name === name);
      return f ? median(f.rounds.map(pick)) : undefined;
    };
    const wgOne = medianOf(WG_GO, (f) => f.one);
    const nsDirectOne = medianOf(NS_DIRECT, (f) => f.one);
    const cCpu = medianOf(VIA_RELAY, (f) => f.cpuPerGiB) ?? Number.NaN;
    const sCpu = medianOf(SSH_R, (f) => f.cpuPerGiB) ?? Number.NaN;

    console.log(
      `\n(b) small requests, ${SAMPLES} samples each after ${WARM_MS} ms of the same requests: a new connection` +
        ' per request (GET of 100 bytes; for CONNECT that includes the TLS handshake with the relay and a stream' +
        ' open), and 100-byte round trips on one established connection (the upstream echoes); without and with' +
        ' one bulk download on the same path, run by another process',
    );
    console.log(
      '| path | bulk stream | new conn p50 ms | new conn p99 ms | established p50 ms | established p90 ms | established p99 ms | bulk MB/s meanwhile |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    const caFile = join(dir, 'relay-ca.pem');
    writeFileSync(caFile, ca);
    const paths: [string, Dial, string[]][] = [
      ['direct TCP', direct(upPort), ['direct', String(upPort)]],
      [
        'CONNECT via relay + agent',
        via,
        ['via', ready.url, caFile, ready.adminKey, `bench.clusters.local:${upPort}`],
      ],
    ];
    if (ssh) paths.push(['ssh -R', direct(ssh.port), ['direct', String(ssh.port)]]);
    if (site) {
      paths.push([NS_DIRECT, site.direct.dial, site.direct.bulkArgs]);
      paths.push([NS_RELAYED, site.relayed.dial, site.relayed.bulkArgs]);
    }
    const idle = new Map<string, { p50: number; p99: number }>();
    const loaded = new Map<string, { p50: number; p99: number }>();
    for (const [name, dial, bulkArgs] of paths) {
      for (const busy of [false, true]) {
        const stop = busy ? await saturate(bulkArgs) : undefined;
        const fresh = () => download(dial, 100);
        await warmUp(fresh, WARM_MS);
        const f0 = await latency(fresh, SAMPLES);
        const pipe = await echoPipe(dial);
        await warmUp(() => pipe.rtt(), WARM_MS);
        const kept = await latency(() => pipe.rtt(), SAMPLES);
        pipe.close();
        const mbps = stop ? await stop() : undefined;
        (busy ? loaded : idle).set(name, kept);
        const f = (n: number): string => n.toFixed(2);
        console.log(
          `| ${name} | ${busy ? 'yes' : 'no'} | ${f(f0.p50)} | ${f(f0.p99)} | ${f(kept.p50)} | ${f(kept.p90)} | ${f(kept.p99)} | ${mbps === undefined ? '-' : mbps.toFixed(1)} |`,
        );
      }
    }
    const base = idle.get('direct TCP');
    const tun = idle.get('CONNECT via relay + agent');
    if (base && tun) {
      console.log(
        `\nadded by the tunnel on an established connection, idle: p50 ${signed(tun.p50 - base.p50)} ms, ` +
          `p99 ${signed(tun.p99 - base.p99)} ms (target: p99 added <= 2 ms)`,
      );
    }
    await newConnectionTables({ ready, ca, upPort, ssh, site, via, tunnel: [relay.pid, agent.pid] }, dir);
    const inTurns = site ? await namespaceLatencyInTurns(site) : undefined;
    const flips = site ? await measureFlips(site, FLIP_ROUNDS, saturate) : [];
    if (site && nsDirectOne !== undefined)
      directTargets({
        wgOne,
        directOne: nsDirectOne,
        idle,
        busy: loaded,
        inTurns,
        mtu: site.directMtu(),
        flips,
      });

    const cert = createSelfSignedCert({ commonName: 'bench', altNames: ['127.0.0.1'], now: Date.now() });
    const p = await measurePrimitives(256 * 1024 * 1024, { key: cert.keyPem, cert: cert.certPem });
    const g = (n: number): string => n.toFixed(2);
    console.log(
      '\n(c) CPU s per GiB, measured now: the building blocks (both ends of a Node loopback connection; the' +
        ` WireGuard AEAD, ChaCha20-Poly1305 64 KiB, ${defaultAead().name}) and the tunnels of (a)`,
    );
    console.log('| what | CPU s per GiB |');
    console.log('|---|---|');
    console.log(`| Node TCP connection, writer + reader | ${g(p.tcpPair)} |`);
    console.log(`| Node TLS connection, writer + reader | ${g(p.tlsPair)} |`);
    console.log(`| ChaCha20-Poly1305 seal / open | ${g(p.seal)} / ${g(p.open)} |`);
    console.log(
      `| floor for relay + agent (half a TCP connection, seal, 1.5 TLS connections, open) | ${g(p.tunnelFloor)} |`,
    );
    console.log(`| relay + agent, measured in (a), median | ${g(cCpu)} |`);
    if (ssh) console.log(`| sshd + ssh, measured in (a), median | ${g(sCpu)} |`);
  } finally {
    await stopChildren(children);
    rmSync(dir, { recursive: true, force: true });
    await cleanupAll();
  }
}

main().catch((err: unknown) => {
  console.error(`tunnel bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
