/**
 * The longest pause of a byte stream across path flips (bench/path-flips.ts measureStalls): a namespace agent on
 * the direct path (bench/netns-agents.ts, veth at MTU 1,500) moves one endless download read by this process while
 * its UDP is dropped both ways with iptables and allowed again, `flips` times in all. For each flip, the longest
 * gap between two arrivals from the flip until 2 s after the hub's switch; baseline in the same run: the longest
 * gap in a stretch of the same download as long as each flip's window, right after it, with no flip. `--burn`
 * runs a process spinning on one core meanwhile (a loaded machine). As root. `node dist/bench/path-flips-bench.js [flips, default 20] [--burn]`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupAll } from '../test/helpers/cleanup.js';
import { describeMachine } from './machine.js';
import { startNamespaceSite } from './netns-agents.js';
import { type FlipStall, measureStalls } from './path-flips.js';
import { children } from './tunnel-fixture.js';

const FLIPS = Number(process.argv.find((a, i) => i >= 2 && /^\d+$/.test(a)) ?? '20');
const BURN = process.argv.includes('--burn');

const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function quantile(xs: number[], p: number): number {
  const t = [...xs].sort((a, b) => a - b);
  return t[Math.min(t.length - 1, Math.floor(t.length * p))] ?? Number.NaN;
}

const ms = (n: number): string => n.toFixed(0);
const spread = (xs: number[]): string =>
  `${ms(quantile(xs, 0.5))} / ${ms(quantile(xs, 0.99))} / ${ms(Math.max(...xs))}`;

/** The table: per kind of flip, its longest stalls next to those of as long a stretch with no flip right after. */
function printStalls(stalls: FlipStall[]): void {
  console.log(
    '| flip | flips | longest stall p50 / p99 / max ms | no flip, as long, right after: p50 / p99 / max ms | hub switch after p50 / max ms |',
  );
  console.log('|---|---|---|---|---|');
  for (const kind of ['silenced', 'allowed'] as const) {
    const of = stalls.filter((s) => s.flip === kind);
    if (of.length === 0) continue;
    const sw = of.map((s) => s.switchMs);
    console.log(
      `| UDP ${kind} | ${of.length} | ${spread(of.map((s) => s.stallMs))} | ${spread(of.map((s) => s.quietMs))} | ` +
        `${ms(quantile(sw, 0.5))} / ${ms(Math.max(...sw))} |`,
    );
  }
  const p99 = quantile(
    stalls.map((s) => s.stallMs),
    0.99,
  );
  console.log(
    `target: no stall longer than 300 ms at p99: ${p99 <= 300 ? 'met' : 'NOT met'} (${ms(p99)} ms)`,
  );
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    console.log('(path flips skipped: need root for the network namespace and iptables)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'path-flips-'));
  let burner: ChildProcess | undefined;
  try {
    console.log(`machine: ${describeMachine()}; load average at the start: ${loadAverage()}`);
    const site = await startNamespaceSite(dir);
    if (BURN) burner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    const { stalls, bytes } = await measureStalls(site, FLIPS);
    console.log(
      `\n${FLIPS} flips during one download (${(bytes / 1e9).toFixed(2)} GB moved, no stream error, no session drop)` +
        `${BURN ? ', a process spinning on one core meanwhile' : ''}; load average at the end: ${loadAverage()}`,
    );
    printStalls(stalls);
  } finally {
    burner?.kill('SIGKILL');
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
    await cleanupAll();
  }
}

main().catch((err: unknown) => {
  console.error(`path-flips bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
