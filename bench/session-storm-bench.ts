/**
 * WireGuard-session connect storm, relay responsiveness and memory per connected agent (issue #4).
 * Processes: this one orchestrates; a real relay (startRelay + data plane: DERP at /derp and the hub node,
 * plus the same DERP server on a plain-HTTP port standing in for TLS terminated in front) in a child; the
 * storm's agents in `workers` child processes; a probe child with GET /healthz loops and one agent that
 * pings the hub through its WireGuard session (kept out of the storm processes so their event loops do
 * not colour the latencies). The children live in session-storm-children.ts.
 * Phases, each in a fresh relay process on the same store (N + 1 agents registered and Accepted through
 * the store before the relay starts, as after a relay restart):
 *   empty    - a relay with no agents registered: idle memory, for totals per agent;
 *   derp-wss - baseline: N bare DERP clients with the agents' keys (no WireGuard) over wss://;
 *   wss      - N real AgentSessions over wss:// (TLS in the relay): a session = handshake with the hub done;
 *   derp-ws  - baseline: bare DERP clients over ws:// (the relay's DERP server on plain HTTP);
 *   ws       - AgentSessions over ws:// (TLS terminated elsewhere).
 * Reported: time until all N are connected / have a session (and the per-agent p50/p99/max), DERP
 * reconnects and WireGuard initiations, relay CPU per agent (/proc) and while all sit idle afterwards;
 * /healthz latency on a kept-alive connection and on a new TLS connection each time, the pinging agent's
 * RTT and the relay's event-loop delay, idle (same relay, before the storm) vs during the storm; relay RSS,
 * JS heap and external deltas per agent after gc, against the relay before the storm and the empty relay.
 * Run: npm run build && node --expose-gc dist/bench/session-storm-bench.js [agents=2000] [workers=1]
 *      [--phases=empty,derp-wss,wss,derp-ws,ws] [--default-cap: never raise the hub's peer cap (10,000) for runs above it]
 *      [--timeout=120: seconds to wait for all sessions] [--heap-snapshot=DIR]
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HUB_DEFAULT_MAX_PEERS } from '../relay/data/hub/hub-node.js';
import { ask } from './bench-child.js';
import { describeMachine, ratio } from './machine.js';
import { seedAgents } from './seed-agents.js';
import {
  type AgentReport,
  type AgentSpec,
  agentsChild,
  isBare,
  isTls,
  type LoopDelay,
  log,
  type Mem,
  now,
  type Phase,
  probeChild,
  type Ready,
  relayChild,
  type Sample,
  seededAgentSpec,
  sleep,
} from './session-storm-children.js';

/** --timeout=SECONDS: give up waiting for the storm after this long (default 120 s). */
const STORM_TIMEOUT_MS =
  Number(process.argv.find((a) => a.startsWith('--timeout='))?.slice(10) ?? 120) * 1000;
const SETTLE_MS = 3_000;
const IDLE_MS = 2_500;
/** --heap-snapshot=DIR: the relay writes a heap snapshot per phase after the storm (for finding per-agent objects). */
const SNAPSHOT_DIR = process.argv.find((a) => a.startsWith('--heap-snapshot='))?.slice(16);

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat (USER_HZ = 100). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}
function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

function spawnChild(role: string, args: string[] = [], gc = false): ChildProcess {
  return fork(fileURLToPath(import.meta.url), [role, ...args], {
    execArgv: gc ? ['--expose-gc'] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

// --- parent -------------------------------------------------------------------------------------

interface Stat {
  n: number;
  p50: number;
  p99: number;
  max: number;
  failed: number;
}
function stat(xs: number[], failed = 0): Stat {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  return { n: s.length, p50: q(0.5), p99: q(0.99), max: s[s.length - 1] ?? Number.NaN, failed };
}
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const kib = (bytes: number, n: number) => f1(bytes / Math.max(1, n) / 1024);

interface PhaseResult {
  phase: Phase;
  n: number;
  stormS: number;
  connectedS: Stat;
  sessionS: Stat;
  reconnects: number;
  initiations: number;
  relayCpuS: number;
  /** Relay CPU while the N agents sit connected after the storm, % of one core. */
  idleCpuPct: number;
  /** Relay CPU of the probes alone (before the storm), % of one core. */
  probeCpuPct: number;
  /** relayCpuS minus the probes' rate over the storm's duration. */
  netCpuS: number;
  agentCpuS: number;
  before: Mem;
  after: Mem;
  peakRssMiB: number;
  /** The relay's event-loop delay during the storm. */
  lag: LoopDelay;
  idleLag: LoopDelay;
  probes: Record<string, { idle: Stat; storm: Stat }>;
}

async function startRelayChild(dir: string, maxPeers: number) {
  const relay = spawnChild('relay', [dir, String(maxPeers)], true);
  const ready = await ask<Ready>(relay, 'ready');
  return { relay, ready };
}

async function runPhase(
  phase: Phase,
  dir: string,
  agents: Array<{ priv: string; address: string; psk: string }>,
  workers: number,
  maxPeers: number,
): Promise<PhaseResult> {
  const { relay, ready } = await startRelayChild(dir, maxPeers);
  const tls = isTls(phase);
  const host = new URL(ready.url).host;
  const derpUrl = tls ? `wss://${host}/derp` : `ws://127.0.0.1:${ready.plainPort}/derp`;
  const caPin = tls ? ready.caPin : undefined;
  const spec = (a: { priv: string; address: string; psk: string }): AgentSpec =>
    seededAgentSpec(ready, derpUrl, a);
  const [pinger, ...storm] = agents.map(spec);
  const probe = spawnChild('probe');
  probe.send({ url: ready.url, spec: pinger!, caPin });
  await ask(probe, 'probeReady');
  relay.send({ cmd: 'loop-reset' });
  const kids = Array.from({ length: workers }, () => spawnChild('agents'));
  kids.forEach((k, w) => {
    k.send({ specs: storm.filter((_, i) => i % workers === w), mode: phase, caPin });
  });
  // Idle baseline of the probes; their own relay CPU (mostly a TLS handshake per fresh-connection probe) is
  // measured here and taken out of the per-session figure.
  await sleep(500);
  const p0 = cpuMs(relay.pid!);
  const tp0 = now();
  await sleep(IDLE_MS - 500);
  const probeCpuPct = ((cpuMs(relay.pid!) - p0) / (now() - tp0)) * 100;
  const before = await ask<Mem>(relay, 'mem', { cmd: 'mem' });
  const cpu0 = cpuMs(relay.pid!);
  const ups = kids.map(() => 0);
  kids.forEach((k, w) => {
    k.on('message', (m: { progress?: number }) => {
      if (m.progress !== undefined) ups[w] = m.progress;
    });
  });
  const idleLag = await ask<LoopDelay>(relay, 'lag', { cmd: 'loop' });
  relay.send({ cmd: 'loop-reset' });
  const t0 = now();
  for (const k of kids) k.send({ cmd: 'go' });
  const reports = kids.map((k) => ask<AgentReport>(k, 'report'));
  let done = false;
  void Promise.all(reports).then(() => (done = true));
  let lastLog = 0;
  while (!done && now() - t0 < STORM_TIMEOUT_MS) {
    await sleep(50);
    if (now() - lastLog > 2000) {
      lastLog = now();
      log(
        `${phase}: ${ups.reduce((a, b) => a + b, 0)}/${storm.length} up after ${f1((now() - t0) / 1000)} s`,
      );
    }
  }
  if (!done) for (const k of kids) k.send({ cmd: 'report' });
  const reps = await Promise.all(reports);
  const relayCpuS = (cpuMs(relay.pid!) - cpu0) / 1000;
  const netCpuS = relayCpuS - (probeCpuPct / 100) * ((now() - t0) / 1000);
  const lag = await ask<LoopDelay>(relay, 'lag', { cmd: 'loop' });
  const tEnd = now();
  const probeSamples = await ask<Record<string, Sample[]>>(probe, 'samples', { cmd: 'stop' });
  // Idle cost of N connected agents (their ICMP probes every 25 s, DERP pings, the hub's status tick), probes stopped.
  await sleep(1000);
  const idle0 = cpuMs(relay.pid!);
  await sleep(SETTLE_MS);
  const idleCpuPct = ((cpuMs(relay.pid!) - idle0) / SETTLE_MS) * 100;
  const snapshot = SNAPSHOT_DIR ? join(SNAPSHOT_DIR, `relay-${phase}.heapsnapshot`) : undefined;
  const after = await ask<Mem>(relay, 'mem', { cmd: 'mem', snapshot });
  const peak = peakRssMiB(relay.pid!);
  for (const k of kids) await stopChild(k);
  await stopChild(probe);
  await stopChild(relay);
  const all = (pick: (r: AgentReport) => number[]) => reps.flatMap(pick);
  const secs = (xs: number[]) => {
    const ok = xs.filter((x) => Number.isFinite(x)).map((x) => (x - t0) / 1000);
    return stat(ok, xs.length - ok.length);
  };
  const connectedS = secs(all((r) => r.connected));
  const sessionS = secs(all((r) => r.session));
  const last = isBare(phase) ? connectedS : sessionS;
  const probes: PhaseResult['probes'] = {};
  for (const [name, xs] of Object.entries(probeSamples)) {
    const inWin = (a: number, b: number) => xs.filter((x) => x.t >= a && x.t < b);
    const idle = inWin(0, t0);
    const during = inWin(t0, tEnd);
    probes[name] = {
      idle: stat(
        idle.filter((x) => x.ok).map((x) => x.ms),
        idle.filter((x) => !x.ok).length,
      ),
      storm: stat(
        during.filter((x) => x.ok).map((x) => x.ms),
        during.filter((x) => !x.ok).length,
      ),
    };
  }
  return {
    phase,
    n: storm.length,
    stormS: last.failed > 0 ? (tEnd - t0) / 1000 : last.max,
    connectedS,
    sessionS,
    reconnects: reps.reduce((a, r) => a + r.reconnects, 0),
    initiations: reps.reduce((a, r) => a + r.initiations, 0),
    relayCpuS,
    idleCpuPct,
    probeCpuPct,
    netCpuS,
    agentCpuS: reps.reduce((a, r) => a + r.cpuMs, 0) / 1000,
    before,
    after,
    peakRssMiB: peak,
    lag,
    idleLag,
    probes,
  };
}

async function idleMemory(dir: string): Promise<Mem> {
  const { relay } = await startRelayChild(dir, 0);
  await sleep(1000);
  const m = await ask<Mem>(relay, 'mem', { cmd: 'mem' });
  await stopChild(relay);
  return m;
}

async function main(): Promise<void> {
  const pos = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const n = Number(pos[0] ?? 2000);
  const workers = Number(pos[1] ?? 1);
  const phasesArg =
    process.argv.find((a) => a.startsWith('--phases='))?.slice(9) ?? 'empty,derp-wss,wss,derp-ws,ws';
  const phases = phasesArg.split(',') as Phase[];
  const defaultCap = process.argv.includes('--default-cap');
  // The shipped cap (10,000) holds the default 2,000 agents; larger runs raise it unless --default-cap.
  const maxPeers = defaultCap || n + 1 <= HUB_DEFAULT_MAX_PEERS ? 0 : n + 1;
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`# session-storm-bench on ${describeMachine()}`);
  console.log(
    `${n} agents in ${workers} worker process(es); load average at start ${load}; hub peer cap ` +
      `${maxPeers === 0 ? `${HUB_DEFAULT_MAX_PEERS} (default)` : `${maxPeers} (raised from the default ${HUB_DEFAULT_MAX_PEERS})`}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'session-storm-'));
  const emptyDir = mkdtempSync(join(tmpdir(), 'session-storm-empty-'));
  try {
    const t = performance.now();
    const agents = await seedAgents(dir, n + 1);
    log(`seeded ${n + 1} agents in ${f1((performance.now() - t) / 1000)} s`);
    const results: PhaseResult[] = [];
    let empty: Mem | undefined;
    for (const phase of phases) {
      if (phase === 'empty') {
        empty = await idleMemory(emptyDir);
        continue;
      }
      log(`phase ${phase}`);
      results.push(await runPhase(phase, dir, agents, workers, maxPeers));
    }
    report(results, empty, n);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(emptyDir, { recursive: true, force: true });
  }
}

const LABEL: Record<Phase, string> = {
  empty: 'relay with no agents',
  'derp-wss': 'bare DERP clients, wss:// (baseline)',
  'derp-ws': 'bare DERP clients, ws:// (baseline)',
  wss: 'WireGuard sessions, wss://',
  ws: 'WireGuard sessions, ws:// (TLS in front)',
};

function report(results: PhaseResult[], empty: Mem | undefined, n: number): void {
  console.log('\n### Connect storm\n');
  console.log(
    '| phase | connected / with session | all in (s) | per-agent p50 / p99 / max (s) | DERP reconnects | ' +
      'WireGuard initiations | relay CPU s | relay CPU ms per agent (net of the probes) | agent processes CPU s | ' +
      'relay CPU afterwards, all connected and idle |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const s = isBare(r.phase) ? r.connectedS : r.sessionS;
    console.log(
      `| ${LABEL[r.phase]} | ${r.connectedS.n} / ${isBare(r.phase) ? '-' : r.sessionS.n} of ${r.n} | ` +
        `${f2(r.stormS)}${s.failed > 0 ? ' (timed out)' : ''} | ${f2(s.p50)} / ${f2(s.p99)} / ${f2(s.max)} | ` +
        `${r.reconnects} | ${isBare(r.phase) ? '-' : r.initiations} | ${f2(r.relayCpuS)} | ` +
        `${f2((r.relayCpuS * 1000) / Math.max(1, s.n))} (${f2((r.netCpuS * 1000) / Math.max(1, s.n))}) | ` +
        `${f2(r.agentCpuS)} | ${f1(r.idleCpuPct)} % of a core |`,
    );
  }
  console.log(
    `\nThe probes alone (before each storm) cost the relay ${results.map((r) => `${f1(r.probeCpuPct)} %`).join(' / ')} ` +
      'of a core (50 GET /healthz per second on a new TLS connection, 50 on a kept-alive one, 50 in-tunnel pings).',
  );
  console.log('\n### Relay responsiveness (latency in ms, idle = same relay before the storm)\n');
  console.log(
    '| phase | probe | idle p50 / p99 / max | storm p50 / p99 / max | p50 ratio | p99 ratio | failed idle / storm | samples idle / storm |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  const probeName: Record<string, string> = {
    kept: 'GET /healthz, kept-alive HTTPS',
    fresh: 'GET /healthz, new TLS connection',
    ping: 'agent ICMP echo to the hub (WireGuard)',
  };
  for (const r of results) {
    for (const [name, p] of Object.entries(r.probes)) {
      const x = (s: Stat) => `${f2(s.p50)} / ${f2(s.p99)} / ${f2(s.max)}`;
      console.log(
        `| ${LABEL[r.phase]} | ${probeName[name] ?? name} | ${x(p.idle)} | ${x(p.storm)} | ` +
          `${f2(p.storm.p50 / p.idle.p50)}x | ${f2(p.storm.p99 / p.idle.p99)}x | ${p.idle.failed} / ${p.storm.failed} | ` +
          `${p.idle.n} / ${p.storm.n} |`,
      );
    }
    const l = (d: LoopDelay) => `${f1(d.p50)} / ${f1(d.p99)} / ${f1(d.max)}`;
    console.log(
      `| ${LABEL[r.phase]} | relay event-loop delay | ${l(r.idleLag)} | ${l(r.lag)} | ` +
        `${f2(r.lag.p50 / r.idleLag.p50)}x | ${f2(r.lag.p99 / r.idleLag.p99)}x | | |`,
    );
  }
  console.log('\n### Relay memory per idle connected agent (after gc; target <= 32 KiB, derper ~63 KB)\n');
  console.log(
    '| phase | clients / hub sessions up | relay RSS MiB: no agents / before / after (peak) | ' +
      'connection (+ session) per agent: RSS / JS heap / external KiB | RSS vs bare DERP, same listener | ' +
      'total per agent incl. its hub peer (vs relay with no agents): RSS / JS heap KiB |',
  );
  console.log('|---|---|---|---|---|---|');
  const perAgent = (r: PhaseResult) =>
    (r.after.rss - r.before.rss) / Math.max(1, r.after.clients - r.before.clients);
  for (const r of results) {
    const added = Math.max(1, r.after.clients - r.before.clients);
    const mib = (b: number) => f1(b / 2 ** 20);
    const bare = results.find((b) => isBare(b.phase) && isTls(b.phase) === isTls(r.phase));
    const vsBare =
      bare && !isBare(r.phase) ? ratio(perAgent(r), perAgent(bare)) : isBare(r.phase) ? '100%' : '-';
    const total = empty
      ? `${kib(r.after.rss - empty.rss, added)} / ${kib(r.after.heapUsed - empty.heapUsed, added)}`
      : '-';
    console.log(
      `| ${LABEL[r.phase]} | ${r.after.clients} / ${r.after.sessionsUp} | ` +
        `${empty ? mib(empty.rss) : '-'} / ${mib(r.before.rss)} / ${mib(r.after.rss)} (${f1(r.peakRssMiB)}) | ` +
        `${kib(r.after.rss - r.before.rss, added)} / ${kib(r.after.heapUsed - r.before.heapUsed, added)} / ` +
        `${kib(r.after.external - r.before.external, added)} | ${vsBare} | ${total} |`,
    );
  }
  const first = results[0];
  if (empty && first) {
    const peers = first.before.hubPeers;
    console.log(
      `\nHub peers without a connection (relay with ${peers} registered agents vs a relay with none, both idle ` +
        `after gc): RSS ${kib(first.before.rss - empty.rss, peers)} KiB, JS heap ` +
        `${kib(first.before.heapUsed - empty.heapUsed, peers)} KiB per registered agent.`,
    );
  }
  for (const r of results) console.log(`relay counters after ${r.phase}: ${JSON.stringify(r.after.extra)}`);
  console.log(
    `(${n} storm agents; each AgentSession probes the hub every 25 s while idle, every 2 s under traffic)`,
  );
}

const role = process.argv[2];
const fail = (err: unknown) => {
  console.error(err);
  process.exit(1);
};
// A child whose parent is gone (crashed, killed) exits instead of lingering with its sockets open.
if (role === 'relay' || role === 'probe' || role === 'agents')
  process.on('disconnect', () => process.exit(0));
if (role === 'relay') relayChild(process.argv[3]!, Number(process.argv[4])).catch(fail);
else if (role === 'probe') probeChild().catch(fail);
else if (role === 'agents') agentsChild().catch(fail);
else main().then(() => process.exit(0), fail);
