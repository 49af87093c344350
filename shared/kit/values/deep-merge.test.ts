import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepMerge, isPlainMap, layerValues, type Values } from './deep-merge.js';

const leaf = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
);
const key = fc.constantFrom('a', 'b', 'c', 'd', '__proto__', 'constructor');
const { tree } = fc.letrec((tie) => ({
  tree: fc.dictionary(key, fc.oneof({ depthSize: 'small' }, leaf, tie('tree')), { maxKeys: 4 }),
}));
const values = tree as fc.Arbitrary<Values>;

/** Reference semantics, written as plainly as possible. */
function lookup(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const p of path) {
    if (!isPlainMap(cur) || !Object.hasOwn(cur, p)) return undefined;
    cur = cur[p];
  }
  return cur;
}

function leafPaths(v: Values, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  for (const k of Object.keys(v)) {
    const x = v[k];
    if (isPlainMap(x) && Object.keys(x).length > 0) out.push(...leafPaths(x, [...prefix, k]));
    else out.push([...prefix, k]);
  }
  return out;
}

describe('deepMerge', () => {
  it('every leaf of the top layer wins', () => {
    fc.assert(
      fc.property(values, values, (a, b) => {
        const m = deepMerge(a, b);
        for (const p of leafPaths(b)) {
          const want = lookup(b, p);
          if (isPlainMap(want)) expect(isPlainMap(lookup(m, p))).toBe(true);
          else expect(lookup(m, p)).toEqual(want);
        }
      }),
    );
  });

  it('a leaf of the bottom layer survives unless the top layer has something on its path', () => {
    fc.assert(
      fc.property(values, values, (a, b) => {
        const m = deepMerge(a, b);
        for (const p of leafPaths(a)) {
          const shadowed = p.some((_, i) => {
            const x = lookup(b, p.slice(0, i + 1));
            return x !== undefined && !(isPlainMap(x) && i < p.length - 1);
          });
          if (!shadowed) expect(lookup(m, p)).toEqual(lookup(a, p));
        }
      }),
    );
  });

  it('has {} as identity, layers as a left fold, and leaves its inputs alone', () => {
    fc.assert(
      fc.property(values, values, values, (a, b, c) => {
        const before = JSON.stringify([a, b, c]);
        expect(deepMerge(a, {})).toEqual(a);
        expect(deepMerge({}, a)).toEqual(a);
        expect(layerValues([a, b, c])).toEqual(deepMerge(deepMerge(a, b), c));
        expect(JSON.stringify([a, b, c])).toBe(before);
      }),
    );
  });

  it('never touches Object.prototype through __proto__ keys', () => {
    const evil = JSON.parse('{"__proto__": {"polluted": true}, "a": {"__proto__": {"x": 1}}}') as Values;
    const m = deepMerge({ a: { y: 2 } }, evil);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    expect(Object.hasOwn(m, '__proto__')).toBe(true);
    expect(JSON.parse(JSON.stringify(m))).toEqual(
      JSON.parse('{"__proto__":{"polluted":true},"a":{"y":2,"__proto__":{"x":1}}}'),
    );
  });

  it('replaces arrays and scalars, merges maps (the documented rule)', () => {
    expect(
      deepMerge(
        { a: { b: 1, c: [1, 2] }, s: 'x', n: { k: 1 } },
        { a: { c: [3], d: 4 }, s: { now: 'map' }, n: null },
      ),
    ).toEqual({ a: { b: 1, c: [3], d: 4 }, s: { now: 'map' }, n: null });
  });
});
