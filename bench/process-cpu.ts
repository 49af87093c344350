/**
 * CPU time of processes from /proc (Linux), for benchmarks that charge work to the process doing it: one
 * process (user + system), or a server with its children (PostgreSQL's postmaster and backends: their
 * user + system, plus what exited children left in the postmaster's cutime/cstime).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: clock ticks per second in /proc/<pid>/stat (100 on Linux). */
const TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat after the command name: index 0 is field 3 (state) of stat(5). */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null; // gone
  }
}

const ms = (ticks: number): number => (ticks * 1000) / TICKS_PER_SECOND;

/** CPU time of one process in ms (utime + stime, fields 14 and 15). */
export function cpuMs(pid: number): number {
  const f = statFields(pid);
  return f ? ms(Number(f[11]) + Number(f[12])) : 0;
}

/** CPU time in ms of `pid`, its live children and the children it has reaped (cutime + cstime). */
export function treeCpuMs(pid: number): number {
  const own = statFields(pid);
  if (!own) return 0;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ms(ticks);
}

/** Runs `one(i)` for i in 0..n-1 on `concurrency` workers; resolves with the seconds it took. */
export async function drive(
  n: number,
  concurrency: number,
  one: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) await one(i);
    }),
  );
  return (performance.now() - start) / 1000;
}
