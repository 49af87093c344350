import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Family, Metrics, RunningTotals } from './metrics.js';

/** Undoes the text format's label escaping (\\, \", \n), the way a scraper reads it. */
function unescapeLabel(v: string): string {
  return v.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

/** Parses one sample line `name{k="v",...} value` (values escaped as the text format says). */
function parseSample(line: string): { name: string; labels: Record<string, string>; value: string } {
  // `s`: a label value may hold a raw carriage return (only \\, " and line feed are escaped).
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/s.exec(line);
  if (!m) throw new Error(`not a sample line: ${line}`);
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/gs;
  for (const l of (m[3] ?? '').matchAll(re)) labels[l[1]!] = unescapeLabel(l[2]!);
  return { name: m[1]!, labels, value: m[4]! };
}

/** The sample lines of family `name` in an exposition text. */
function samplesOf(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
}

describe('exposition (prom-client)', () => {
  it('property: any label value survives rendering and parsing, and stays on one line', async () => {
    const m = new Metrics();
    let labels: Record<string, string> = {};
    m.addCollector(() => [{ name: 'x_total', help: 'h', type: 'counter', samples: [[labels, 7]] }]);
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.string({ maxLength: 40 }),
        async (a, b) => {
          labels = { first: a, second: b };
          const lines = samplesOf(await m.render([]), 'x_total');
          expect(lines).toHaveLength(1);
          expect(parseSample(lines[0]!)).toEqual({ name: 'x_total', labels, value: '7' });
        },
      ),
      { numRuns: 50 },
    );
  });

  it('writes HELP and TYPE lines, escapes HELP, and renders special gauge values', async () => {
    const f: Family = {
      name: 'g',
      help: 'line one\nback\\slash',
      type: 'gauge',
      samples: [
        [{}, 1.5],
        [{ k: 'v' }, Number.POSITIVE_INFINITY],
        [{ k: 'w' }, Number.NaN],
      ],
    };
    const m = new Metrics();
    m.addCollector(() => [f]);
    const text = await m.render([]);
    expect(text).toContain('# HELP g line one\\nback\\\\slash\n# TYPE g gauge\n');
    const [one, inf, nan] = samplesOf(text, 'g');
    expect([one, inf]).toEqual(['g 1.5', 'g{k="v"} +Inf']);
    // prom-client writes NaN as `Nan`; the text format's parsers take it in any case.
    expect(nan).toMatch(/^g\{k="w"\} nan$/i);
  });

  it("carries prom-client's default process and Node.js collectors and the build info", async () => {
    const text = await new Metrics({ prefix: 'tunnel_relay', version: '9.9.9' }).render([]);
    for (const name of [
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'process_open_fds',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(samplesOf(text, name).length, name).toBeGreaterThan(0);
    }
    expect(samplesOf(text, 'tunnel_relay_build_info')).toEqual([
      `tunnel_relay_build_info{version="9.9.9",node_version="${process.versions.node}"} 1`,
    ]);
  });

  it('folds label sets beyond the cap into one `other` series', async () => {
    const m = new Metrics();
    for (let i = 0; i < 250; i++) m.requests.inc({ route: `/r${i}`, code: '200' });
    expect(samplesOf(await m.render([]), 'tunnel_relay_http_requests_total')).toHaveLength(201);
    expect(m.requests.get({ route: 'other', code: 'other' })).toBe(50);
  });

  it('reads collectors at every scrape and stops after removal', async () => {
    const m = new Metrics();
    let n = 0;
    const remove = m.addCollector(() => [
      { name: 'c_total', help: 'c', type: 'counter', samples: [[{ reason: 'a' }, ++n]] },
    ]);
    expect(await m.render([])).toContain('c_total{reason="a"} 1\n');
    expect(await m.render([])).toContain('c_total{reason="a"} 2\n');
    expect(await m.render([])).toContain('# TYPE c_total counter');
    remove();
    expect(await m.render([])).not.toContain('c_total');
  });

  it('a family whose label names change is exported with the new ones only', async () => {
    const m = new Metrics();
    let samples: Array<[Record<string, string>, number]> = [[{ reason: 'a' }, 1]];
    m.addCollector(() => [{ name: 'd_total', help: 'd', type: 'counter', samples }]);
    expect(samplesOf(await m.render([]), 'd_total')).toEqual(['d_total{reason="a"} 1']);
    samples = [[{ stage: 's', reason: 'b' }, 2]];
    expect(samplesOf(await m.render([]), 'd_total')).toEqual(['d_total{stage="s",reason="b"} 2']);
  });
});

type Obj = { v: number[] };

describe('RunningTotals', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('add' as const) }),
    fc.record({
      kind: fc.constant('inc' as const),
      i: fc.nat(),
      field: fc.nat({ max: 1 }),
      by: fc.nat({ max: 1000 }),
    }),
    fc.record({ kind: fc.constant('remove' as const), i: fc.nat(), retire: fc.boolean() }),
    fc.record({ kind: fc.constant('sample' as const) }),
  );

  it('property: sums over a changing set never decrease; with retire() they are exact', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const t = new RunningTotals<Obj>(['a', 'b'], (o) => o.v);
        let live: Obj[] = [];
        const exact = [0, 0];
        let lost = false;
        let prev = [0, 0];
        const check = (): void => {
          const now = t.sample(live);
          for (let f = 0; f < 2; f++) expect(now[f]).toBeGreaterThanOrEqual(prev[f]!);
          if (!lost) expect([...now]).toEqual(exact);
          else for (let f = 0; f < 2; f++) expect(now[f]).toBeLessThanOrEqual(exact[f]!);
          prev = [...now];
        };
        for (const o of ops) {
          if (o.kind === 'add') live.push({ v: [0, 0] });
          else if (o.kind === 'inc' && live.length > 0) {
            const obj = live[o.i % live.length]!;
            obj.v[o.field]! += o.by;
            exact[o.field]! += o.by;
          } else if (o.kind === 'remove' && live.length > 0) {
            const obj = live[o.i % live.length]!;
            live = live.filter((x) => x !== obj);
            if (o.retire) t.retire(obj);
            else lost = true;
          } else if (o.kind === 'sample') check();
        }
        check();
      }),
    );
  });

  it('an object whose counter went down (reset) counts from zero again, never backwards', () => {
    const t = new RunningTotals<Obj>(['a'], (o) => o.v);
    const o = { v: [10] };
    expect(t.sample([o])).toEqual([10]);
    o.v[0] = 3;
    expect(t.sample([o])).toEqual([13]);
  });
});
