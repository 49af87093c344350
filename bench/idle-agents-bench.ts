/**
 * What N idle connected agents cost a relay: the relay's CPU (% of one core, from /proc) and the packets and
 * bytes its DERP server receives and sends per agent per minute, while N real AgentSessions sit connected
 * with no application traffic (their liveness probes, disco pings, WireGuard keepalives and the relay
 * connections' own keepalive are all that flows). Processes: this one orchestrates; the relay and the agents
 * run in children (session-storm-children.ts: the same relay child and agents child as session-storm-bench.ts),
 * agents registered and Accepted through the store before the relay starts. The agents are relayed (the relay's
 * UDP port is off): the relay carries everything they send.
 * Run: npm run build && node dist/bench/idle-agents-bench.js [agents=1000] [--window=60] [--tls]
 *      (--tls: agents over wss:// with TLS in the relay; default ws:// on the relay's plain DERP port).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ask } from './bench-child.js';
import { describeMachine } from './machine.js';
import { seedAgents } from './seed-agents.js';
import {
  type AgentSpec,
  agentsChild,
  log,
  type Mem,
  type Ready,
  relayChild,
  seededAgentSpec,
  sleep,
} from './session-storm-children.js';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const WINDOW_MS = Number(arg('window') ?? 60) * 1000;
/** After every session is up: the agents' selectors leave their confirm (5 s) and active (10 s) windows. */
const SETTLE_MS = 20_000;
const UP_TIMEOUT_MS = 180_000;

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

function spawnChild(role: string, args: string[] = []): ChildProcess {
  return fork(fileURLToPath(import.meta.url), [role, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function derpTotals(m: Mem): { packets: number; bytes: number } {
  const x = m.extra;
  return {
    packets: (x.derpPacketsIn ?? 0) + (x.derpPacketsOut ?? 0),
    bytes: (x.derpBytesIn ?? 0) + (x.derpBytesOut ?? 0),
  };
}

async function main(): Promise<void> {
  const n = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 1000);
  const tls = process.argv.includes('--tls');
  const dir = mkdtempSync(join(tmpdir(), 'idle-agents-'));
  const kids: ChildProcess[] = [];
  try {
    const agents = await seedAgents(dir, n);
    const relay = spawnChild('relay', [dir, '0']);
    kids.push(relay);
    const ready = await ask<Ready>(relay, 'ready');
    const host = new URL(ready.url).host;
    const derpUrl = tls ? `wss://${host}/derp` : `ws://127.0.0.1:${ready.plainPort}/derp`;
    const spec = (a: (typeof agents)[number]): AgentSpec => seededAgentSpec(ready, derpUrl, a);
    const worker = spawnChild('agents');
    kids.push(worker);
    await ask<boolean>(worker, 'listening');
    worker.send({
      specs: agents.map(spec),
      mode: tls ? 'wss' : 'ws',
      caPin: tls ? ready.caPin : undefined,
    });
    let progress = 0;
    worker.on('message', (m: { progress?: number }) => {
      if (m.progress === undefined || m.progress === progress) return;
      progress = m.progress;
      log(`${progress}/${n} sessions up`);
    });
    const up = ask<unknown>(worker, 'report');
    worker.send({ cmd: 'go' });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`not every session up within ${UP_TIMEOUT_MS / 1000} s`)),
        UP_TIMEOUT_MS,
      );
    });
    await Promise.race([up, timeout]).finally(() => clearTimeout(timer));
    log(`${n} sessions up; settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    const m0 = await ask<Mem>(relay, 'mem', { cmd: 'mem' });
    const c0 = cpuMs(relay.pid!);
    const t0 = performance.now();
    await sleep(WINDOW_MS);
    const c1 = cpuMs(relay.pid!);
    const elapsed = performance.now() - t0;
    const m1 = await ask<Mem>(relay, 'mem', { cmd: 'mem' });
    const [d0, d1] = [derpTotals(m0), derpTotals(m1)];
    const perAgentMin = (x: number) => ((x / n) * 60_000) / elapsed;
    const cpuPct = ((c1 - c0) / elapsed) * 100;
    console.log(describeMachine());
    const usPerAgentS = ((c1 - c0) * 1000) / n / (elapsed / 1000);
    const mode = tls ? 'wss, TLS in the relay' : 'ws, TLS in front';
    console.log(
      [
        `${n} idle agents (${mode}), ${(elapsed / 1000).toFixed(0)} s:`,
        `relay CPU ${cpuPct.toFixed(2)} % of a core (${usPerAgentS.toFixed(1)} µs per agent per second);`,
        `DERP ${perAgentMin(d1.packets - d0.packets).toFixed(1)} packets and`,
        `${perAgentMin(d1.bytes - d0.bytes).toFixed(0)} bytes per agent per minute (both directions);`,
        `sessions up at the end ${m1.sessionsUp}/${n}`,
      ].join(' '),
    );
  } finally {
    for (const k of kids) k.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

const role = process.argv[2];
const fail = (err: unknown) => {
  console.error(err);
  process.exit(1);
};
if (role === 'relay' || role === 'agents') process.on('disconnect', () => process.exit(0));
if (role === 'relay') relayChild(process.argv[3]!, Number(process.argv[4])).catch(fail);
else if (role === 'agents') agentsChild().catch(fail);
else main().then(() => process.exit(0), fail);
