/**
 * STUN responder throughput against a UDP echo server, both in their own Node process, measured in one run:
 * a client keeps WINDOW requests outstanding for SECONDS and counts answers; the server's CPU comes from
 * /proc. The baseline (`echo`) sends every datagram straight back (the least a Node UDP server can do per
 * datagram); `stun` parses the Binding request and builds its XOR-MAPPED-ADDRESS answer
 * (relay/data/stun/stun-responder.ts, with the answer cap lifted so the capacity shows).
 *   node dist/bench/stun-bench.js [seconds per server, default 3]
 * Child mode (internal): stun-bench.js serve echo|stun
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { STUN_MAX_ANSWERS_PER_SECOND, startStunResponder } from '../relay/data/stun/stun-responder.js';
import { realClock } from '../shared/clock.js';
import { encodeBindingRequest } from '../shared/net/stun/stun-codec.js';
import { describeMachine } from './machine.js';
import { procCpu } from './tunnel-fixture.js';

const WINDOW = 64;

async function serve(kind: string): Promise<void> {
  if (kind === 'stun') {
    const r = await startStunResponder({
      host: '127.0.0.1',
      port: 0,
      clock: realClock,
      maxAnswersPerSecond: Number.POSITIVE_INFINITY,
    });
    process.stdout.write(`${r.port}\n`);
    return;
  }
  const s = dgram.createSocket('udp4');
  s.on('message', (m, r) => s.send(m, r.port, r.address));
  s.bind(0, '127.0.0.1', () => process.stdout.write(`${s.address().port}\n`));
}

async function measure(kind: string, seconds: number): Promise<{ perSec: number; cpuUs: number }> {
  const child: ChildProcess = spawn(process.execPath, [fileURLToPath(import.meta.url), 'serve', kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', () => reject(new Error(`${kind} server exited`)));
    });
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const req = encodeBindingRequest(randomBytes(12));
    let answers = 0;
    let counting = false;
    sock.on('message', () => {
      if (counting) answers++;
      sock.send(req, port, '127.0.0.1');
    });
    for (let i = 0; i < WINDOW; i++) sock.send(req, port, '127.0.0.1');
    await new Promise((r) => setTimeout(r, 1000)); // warm-up
    counting = true;
    const c0 = procCpu(child.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = procCpu(child.pid) - c0;
    counting = false;
    sock.close();
    return { perSec: answers / elapsed, cpuUs: (cpu * 1e6) / Math.max(1, answers) };
  } finally {
    child.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? '3');
  console.log(
    `# STUN responder on ${describeMachine()} (${seconds} s per server, ${WINDOW} requests in flight)`,
  );
  const echo = await measure('echo', seconds);
  const stun = await measure('stun', seconds);
  console.log('| server | answers/s | server CPU us per answer | vs UDP echo |');
  console.log('|---|---|---|---|');
  const f = (n: number): string => Math.round(n).toLocaleString('en-US');
  console.log(`| UDP echo (baseline) | ${f(echo.perSec)} | ${echo.cpuUs.toFixed(1)} | 100% |`);
  console.log(
    `| STUN responder | ${f(stun.perSec)} | ${stun.cpuUs.toFixed(1)} | ${((stun.perSec / echo.perSec) * 100).toFixed(0)}% |`,
  );
  const share = (STUN_MAX_ANSWERS_PER_SECOND * stun.cpuUs) / 1e6;
  console.log(
    `\nat the cap (${f(STUN_MAX_ANSWERS_PER_SECOND)} answers/s) the responder would use ~${(share * 100).toFixed(0)}% of a core`,
  );
}

if (process.argv[2] === 'serve') {
  void serve(process.argv[3] ?? 'echo');
} else {
  main().catch((err: unknown) => {
    console.error(`stun bench failed: ${(err as Error).message}`);
    process.exitCode = 1;
  });
}
