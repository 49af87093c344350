import { readFileSync } from 'node:fs';
import os from 'node:os';

/** One line naming the machine a benchmark ran on, printed with every result. */
export function describeMachine(): string {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  try {
    const m = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) cpu = m[1].trim();
  } catch {
    // not Linux: keep os.cpus()
  }
  const gib = (os.totalmem() / 2 ** 30).toFixed(0);
  return `${os.cpus().length} x ${cpu}, ${gib} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

/** Runs `fn` repeatedly for about `ms` milliseconds and returns operations per second. */
export function opsPerSecond(fn: () => void, ms = 1000): number {
  for (let i = 0; i < 1000; i++) fn(); // warm-up
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 100; i++) fn();
    n += 100;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

export function ratio(value: number, baseline: number): string {
  return baseline > 0 ? `${((value / baseline) * 100).toFixed(0)}%` : 'n/a';
}
