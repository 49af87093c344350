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
 *      agents) and through ssh -R, each with and without one bulk stream saturating the same path.
 * Then the namespace direct agent's path flips (bench/path-flips.ts: its UDP silenced and allowed again during
 * a download) and the direct path's targets: one stream >= 2x the wireguard-go pair, added p99 <= relayed,
 * fallback <= 3 s and upgrade <= 10 s.
 * Real binaries (`tunnel-relay serve`, `tunnel-client join`, /usr/sbin/sshd, ssh). sshd runs with a
 * throw-away host key and a throw-away user key in a temp dir, only that key accepted, loopback only;
 * it needs root (it is skipped with a note otherwise) and `openssh-server` installed.
 * `node dist/bench/tunnel-bench.js [MiB per bulk download, default 256] [small-request samples, default 1000]`.
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
import { measureWireguardGoPair } from './baselines/wireguard-go.js';
import { describeMachine } from './machine.js';
import { type NamespaceSite, startNamespaceSite } from './netns-agents.js';
import { type FlipTimes, measureFlips } from './path-flips.js';
import { measurePrimitives } from './primitive-costs.js';
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
  procCpu,
  type Quantiles,
  start,
  startBenchAgent,
  startRelayAndUpstream,
  warmUp,
} from './tunnel-fixture.js';

const MB = Number(process.argv[2] ?? '256');
const SAMPLES = Number(process.argv[3] ?? '1000');
const SSHD = '/usr/sbin/sshd';
const BULK_CHILD = join(dirname(fileURLToPath(import.meta.url)), 'bulk-child.js');
/** Streams of the parallel bulk download. */
const PARALLEL = 16;
/**
 * Each latency row is measured after this long of the same requests: in a 5,000-sample idle run every slow
 * sample fell in the first ~1.8 s (JIT, caches), so 3 s keeps warm-up out of the p99.
 */
const WARM_MS = 3000;

/** Best of 3 single-stream downloads of MB MiB, in MB/s (10^6 B/s). */
async function bulk(dial: Dial): Promise<{ mbps: number }> {
  let best = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const got = await download(dial, MB * 1024 * 1024);
    best = Math.max(best, got / 1e6 / ((performance.now() - t0) / 1000));
  }
  return { mbps: best };
}

/** A difference in ms with its sign: +0.50, -0.74. */
const signed = (n: number): string => `${n < 0 ? '-' : '+'}${Math.abs(n).toFixed(2)}`;

/** `PARALLEL` downloads of MB / PARALLEL MiB at once, best of 2, in MB/s of all of them together. */
async function bulkParallel(dial: Dial): Promise<number> {
  let best = 0;
  const each = Math.floor((MB * 1024 * 1024) / PARALLEL);
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now();
    const got = await Promise.all(Array.from({ length: PARALLEL }, () => download(dial, each)));
    const total = got.reduce((a, b) => a + b, 0);
    best = Math.max(best, total / 1e6 / ((performance.now() - t0) / 1000));
  }
  return best;
}

/**
 * The baseline wireguard-go pair (bench/baselines/wireguard-go.ts: two namespaces joined by a veth, wireguard-go
 * in each, a Node sender and receiver) moving MB MiB over 1 and PARALLEL connections, in MB/s; undefined (with a
 * note) when the machine lacks root, /dev/net/tun or the tools.
 */
async function wireguardGo(): Promise<{ one: number; many: number } | undefined> {
  try {
    const r = await measureWireguardGoPair(MB * 1024 * 1024, '10.209.251.0/24', PARALLEL);
    const mbps = (t: { bytes: number; seconds: number }): number => t.bytes / 1e6 / t.seconds;
    return { one: mbps(r.tunnel), many: r.tunnelParallel ? mbps(r.tunnelParallel) : Number.NaN };
  } catch (err) {
    console.log(`(wireguard-go pair skipped: ${(err as Error).message})`);
    return undefined;
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

interface NsRow {
  one: number;
  many: number;
  cpu: number;
}

/**
 * Table (a) figures of one namespace agent: 1 stream, PARALLEL streams, CPU of relay + agent per MB MiB. One
 * untimed download of MB MiB comes first: the agents have just started, and on the direct path the first 64 MiB
 * after the start ran at a third to a half of the later ones' rate (code not yet optimised by the JIT, so each datagram costs
 * more and the in-flight cap holds a lower rate).
 */
async function nsBulk(site: NamespaceSite, which: 'direct' | 'relayed'): Promise<NsRow> {
  const a = site[which];
  await download(a.dial, MB * 1024 * 1024);
  const one = (await bulk(a.dial)).mbps;
  const many = await bulkParallel(a.dial);
  const cpu = await bulkCpu(a.dial, [site.relay.pid, a.agent.pid]);
  return { one, many, cpu };
}

/** The direct path's targets from the issue, with the figures they compare. */
function directTargets(o: {
  wgOne: number | undefined;
  direct: NsRow;
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
    const ratio = o.direct.one / o.wgOne;
    line(
      'one stream direct >= 2x the wireguard-go pair',
      `${o.direct.one.toFixed(1)} / ${o.wgOne.toFixed(1)} MB/s = ${ratio.toFixed(2)}x`,
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

/** Path flips of the direct agent measured after the latency rows (bench/path-flips.ts). */
const FLIP_ROUNDS = 3;

const NS_DIRECT = 'CONNECT, netns agent, direct UDP (veth MTU 1,500)';
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

    const wg = await wireguardGo();
    const site = await namespaceSite(dir);
    console.log(
      `\n(a) bulk download of ${MB} MiB over one stream (best of 3) and over ${PARALLEL} parallel streams` +
        ' (best of 2), MB/s = 10^6 B/s; CPU s per GiB of the tunnel processes on one stream',
    );
    console.log(
      `| path | 1 stream MB/s | vs direct | vs ssh -R | ${PARALLEL} streams MB/s | vs direct | vs ssh -R | tunnel CPU s per GiB |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    const d = await bulk(direct(upPort));
    const dN = await bulkParallel(direct(upPort));
    const s = ssh ? await bulk(direct(ssh.port)) : undefined;
    const sN = ssh ? await bulkParallel(direct(ssh.port)) : undefined;
    const sCpu = ssh ? await bulkCpu(direct(ssh.port), ssh.pids) : 0;
    const c = await bulk(via);
    const cN = await bulkParallel(via);
    const cCpu = await bulkCpu(via, [relay.pid, agent.pid]);
    const perGiB = (cpu: number): number => (cpu * 1024) / MB; // bulkCpu measured one MB-MiB download
    const pct = (a: number, b: number | undefined): string => (b ? `${((a / b) * 100).toFixed(0)}%` : '-');
    const row = (name: string, one: number, many: number | undefined, cpu: string): void =>
      console.log(
        `| ${name} | ${one.toFixed(1)} | ${pct(one, d.mbps)} | ${pct(one, s?.mbps)} | ` +
          `${many === undefined ? '-' : many.toFixed(1)} | ${many === undefined ? '-' : pct(many, dN)} | ` +
          `${many === undefined ? '-' : pct(many, sN)} | ${cpu} |`,
      );
    row('direct TCP, loopback', d.mbps, dN, '-');
    if (wg) row('wireguard-go <-> wireguard-go, two namespaces', wg.one, wg.many, '-');
    if (s) row('ssh -R (sshd + ssh)', s.mbps, sN, perGiB(sCpu).toFixed(2));
    row('CONNECT via relay + agent', c.mbps, cN, perGiB(cCpu).toFixed(2));
    const nsDirect = site ? await nsBulk(site, 'direct') : undefined;
    const nsRelayed = site ? await nsBulk(site, 'relayed') : undefined;
    if (nsDirect) row(NS_DIRECT, nsDirect.one, nsDirect.many, perGiB(nsDirect.cpu).toFixed(2));
    if (nsRelayed) row(NS_RELAYED, nsRelayed.one, nsRelayed.many, perGiB(nsRelayed.cpu).toFixed(2));

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
    const inTurns = site ? await namespaceLatencyInTurns(site) : undefined;
    const flips = site ? await measureFlips(site, FLIP_ROUNDS, saturate) : [];
    if (site && nsDirect)
      directTargets({
        wgOne: wg?.one,
        direct: nsDirect,
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
    console.log(`| relay + agent, measured in (a) | ${g(perGiB(cCpu))} |`);
    if (ssh) console.log(`| sshd + ssh, measured in (a) | ${g(perGiB(sCpu))} |`);
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await cleanupAll();
  }
}

/** CPU seconds the tunnel processes (and their children) spend on one download of MB MiB. */
async function bulkCpu(dial: Dial, pids: (number | undefined)[]): Promise<number> {
  const c0 = pids.reduce<number>((a, p) => a + treeCpu(p), 0);
  await download(dial, MB * 1024 * 1024);
  return pids.reduce<number>((a, p) => a + treeCpu(p), 0) - c0;
}

main().catch((err: unknown) => {
  console.error(`tunnel bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
