import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../shared/errors.js';
import { parseSet, setPath } from './values.js';

const seg = fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/);

describe('values --set parsing', () => {
  it('splits KEY.PATH=VALUE at the first = and types the value as YAML', () => {
    fc.assert(
      fc.property(fc.array(seg, { minLength: 1, maxLength: 5 }), fc.string({ maxLength: 30 }), (path, v) => {
        const parsed = parseSet(`${path.join('.')}=${v}`);
        expect(parsed.path).toEqual(path);
      }),
    );
    expect(parseSet('a.b=3')).toEqual({ path: ['a', 'b'], value: 3 });
    expect(parseSet('a=true')).toEqual({ path: ['a'], value: true });
    expect(parseSet('a=[x, y]')).toEqual({ path: ['a'], value: ['x', 'y'] });
    expect(parseSet('a=x=y')).toEqual({ path: ['a'], value: 'x=y' });
    expect(parseSet('a=')).toEqual({ path: ['a'], value: null });
  });

  it('rejects a missing key or empty segments', () => {
    for (const bad of ['=1', 'a', 'a..b=1', '.a=1', 'a.=1']) {
      try {
        parseSet(bad);
        expect.unreachable(bad);
      } catch (err) {
        expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
      }
    }
  });

  it('setPath puts the value at the path and keeps every other key', () => {
    const leaf = fc.oneof(fc.integer(), fc.string(), fc.boolean());
    const doc = fc.dictionary(seg, fc.oneof(leaf, fc.dictionary(seg, leaf, { maxKeys: 3 })), { maxKeys: 4 });
    fc.assert(
      fc.property(doc, fc.array(seg, { minLength: 1, maxLength: 4 }), leaf, (d, path, v) => {
        const before = JSON.stringify(d);
        const out = setPath(d, path, v);
        let cur: unknown = out;
        for (const p of path) cur = (cur as Record<string, unknown>)[p];
        expect(cur).toEqual(v);
        for (const k of Object.keys(d)) if (k !== path[0]) expect(out[k]).toEqual(d[k]);
        expect(JSON.stringify(d)).toBe(before);
      }),
    );
  });
});
