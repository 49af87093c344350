/**
 * Throughput rows measured in rounds: every round takes one figure of each path, in an order reversed every other
 * round (a, b, c, c, b, a, ...), so a busy neighbour that lands on one moment lands on one round of every path, not
 * on one path's row. Each row prints the median over the rounds and the spread (lowest-highest), and its ratio
 * to a baseline is taken within each round, so the ratio's spread shows how far the machine moved it.
 */

/** One round's figures of a path. */
export interface RoundFigures {
  /** MB/s (10^6 B/s) of one stream. */
  one: number;
  /** MB/s of all parallel streams together. */
  many: number;
  /** CPU s per GiB of the tunnel's processes on the one stream; NaN where not measured. */
  cpuPerGiB: number;
}

export interface ThroughputPath {
  name: string;
  round(): Promise<RoundFigures>;
}

export interface PathFigures {
  name: string;
  rounds: RoundFigures[];
}

/** `rounds` rounds of every path, the order reversed every other round. */
export async function measureInRounds(paths: ThroughputPath[], rounds: number): Promise<PathFigures[]> {
  const out = paths.map((p): PathFigures => ({ name: p.name, rounds: [] }));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [...paths.keys()] : [...paths.keys()].reverse();
    for (const i of order) {
      const p = paths[i];
      const o = out[i];
      if (p && o) o.rounds.push(await p.round());
    }
  }
  return out;
}

export function median(xs: readonly number[]): number {
  const t = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (t.length === 0) return Number.NaN;
  const m = Math.floor(t.length / 2);
  return t.length % 2 === 1 ? (t[m] ?? Number.NaN) : ((t[m - 1] ?? 0) + (t[m] ?? 0)) / 2;
}

/** "median (lowest-highest)" with `digits` decimals; "-" when nothing was measured. */
export function withSpread(xs: readonly number[], digits: number): string {
  const t = xs.filter((x) => !Number.isNaN(x));
  if (t.length === 0) return '-';
  const f = (x: number): string => x.toFixed(digits);
  return `${f(median(t))} (${f(Math.min(...t))}-${f(Math.max(...t))})`;
}

/** The round-by-round ratios of `pick` of `a` to `b`. */
export function ratios(
  a: PathFigures,
  b: PathFigures | undefined,
  pick: (f: RoundFigures) => number,
): number[] {
  if (!b) return [];
  return a.rounds.map((f, i) => {
    const base = b.rounds[i];
    return base ? pick(f) / pick(base) : Number.NaN;
  });
}

/** Table (a): per path the medians and spreads, and its ratios to direct TCP and to `ssh -R` within each round. */
export function printThroughput(figs: PathFigures[], baselines: { direct: string; ssh: string }): void {
  const direct = figs.find((f) => f.name === baselines.direct);
  const ssh = figs.find((f) => f.name === baselines.ssh);
  const pct = (xs: number[]): string =>
    withSpread(
      xs.map((x) => x * 100),
      0,
    );
  console.log(
    '| path | 1 stream MB/s | vs direct % | vs ssh -R % | parallel MB/s | vs ssh -R % | tunnel CPU s per GiB |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const f of figs) {
    const one = (x: RoundFigures): number => x.one;
    const many = (x: RoundFigures): number => x.many;
    console.log(
      `| ${f.name} | ${withSpread(f.rounds.map(one), 1)} | ${pct(ratios(f, direct, one))} | ` +
        `${pct(ratios(f, ssh, one))} | ${withSpread(f.rounds.map(many), 1)} | ${pct(ratios(f, ssh, many))} | ` +
        `${withSpread(
          f.rounds.map((x) => x.cpuPerGiB),
          2,
        )} |`,
    );
  }
}
