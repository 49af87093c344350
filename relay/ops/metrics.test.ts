import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeLabelValue, type Family, labelText, Metrics, RunningTotals, renderFamily } from './metrics.js';

/** Undoes the text format's label escaping (\\, \", \n), the way a scraper reads it. */
function unescapeLabel(v: string): string {
  return v.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

/** Parses one sample line `name{k="v",...} value` (values as escaped by labelText). */
function parseSample(line: string): { name: string; labels: Record<string, string>; value: string } {
  // `s`: a label value may hold a raw carriage return (only \\, " and line feed are escaped).
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/s.exec(line);
  if (!m) throw new Error(`not a sample line: ${line}`);
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/gs;
  for (const l of (m[3] ?? '').matchAll(re)) labels[l[1]!] = unescapeLabel(l[2]!);
  return { name: m[1]!, labels, value: m[4]! };
}

describe('exposition text', () => {
  it('escapes backslash, double quote and line feed in label values', () => {
    expect(labelText({ a: 'x\\y"z\nw' })).toBe('{a="x\\\\y\\"z\\nw"}');
    expect(escapeLabelValue('plain')).toBe('plain');
  });

  it('property: any label value survives rendering and parsing, and stays on one line', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 40 }), (a, b) => {
        const text = renderFamily({
          name: 'x_total',
          help: 'h',
          type: 'counter',
          samples: [[{ first: a, second: b }, 7]],
        });
        const lines = text.split('\n');
        expect(lines).toHaveLength(3);
        const s = parseSample(lines[2]!);
        expect(s).toEqual({ name: 'x_total', labels: { first: a, second: b }, value: '7' });
      }),
    );
  });

  it('writes HELP and TYPE lines, escapes HELP, and renders special values', () => {
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
    expect(renderFamily(f).split('\n')).toEqual([
      '# HELP g line one\\nback\\\\slash',
      '# TYPE g gauge',
      'g 1.5',
      'g{k="v"} +Inf',
      'g{k="w"} NaN',
    ]);
  });

  it('folds label sets beyond the cap into one `other` series', () => {
    const m = new Metrics();
    for (let i = 0; i < 250; i++) m.requests.inc({ route: `/r${i}`, code: '200' });
    const lines = m
      .render([])
      .split('\n')
      .filter((l) => l.startsWith('tunnel_relay_http_requests_total'));
    expect(lines).toHaveLength(201);
    expect(m.requests.get({ route: 'other', code: 'other' })).toBe(50);
  });

  it('reads collectors at every scrape and stops after removal', () => {
    const m = new Metrics();
    let n = 0;
    const remove = m.addCollector(() => [
      { name: 'c_total', help: 'c', type: 'counter', samples: [[{ reason: 'a' }, ++n]] },
    ]);
    expect(m.render([])).toContain('c_total{reason="a"} 1\n');
    expect(m.render([])).toContain('c_total{reason="a"} 2\n');
    expect(m.render([])).toContain('# TYPE c_total counter');
    remove();
    expect(m.render([])).not.toContain('c_total');
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
