import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepMerge } from '../../../shared/kit/values/deep-merge.js';
import { valuesVersion } from './values.js';

describe('served values (the relay merges with shared/kit/values/deep-merge.ts)', () => {
  it('deep-merges maps and lets the cluster win for everything else', () => {
    const platform = { image: { repo: 'r', tag: '1' }, replicas: 1, list: [1, 2], keep: true };
    const cluster = { image: { tag: '2' }, list: [3], extra: 'x' };
    expect(deepMerge(platform, cluster)).toEqual({
      image: { repo: 'r', tag: '2' },
      replicas: 1,
      list: [3],
      keep: true,
      extra: 'x',
    });
  });

  it('property: merging with {} is the identity; the version ignores key order', () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 5 }), json, { maxKeys: 6 }), (v) => {
        expect(deepMerge(v, {})).toEqual(v);
        const reversed = Object.fromEntries(Object.entries(v).reverse());
        expect(valuesVersion(reversed)).toBe(valuesVersion(v));
      }),
    );
  });

  it('ignores __proto__ keys', () => {
    const over = JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}');
    const merged = deepMerge({}, over) as Record<string, unknown>;
    expect(merged.a).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
