import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseValues, toYaml } from './values-yaml.js';

const json = fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), {
  maxKeys: 5,
});

describe('parseValues', () => {
  it('reads back every map it wrote', () => {
    fc.assert(
      fc.property(json, (v) => {
        const clean = JSON.parse(JSON.stringify(v)) as Record<string, unknown>;
        expect(parseValues(toYaml(clean))).toEqual({ ok: true, value: clean });
      }),
      { numRuns: 200 },
    );
  });

  it('never throws on arbitrary text: a map, or problems with a line and column', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        const r = parseValues(text);
        if (r.ok) expect(typeof r.value).toBe('object');
        else for (const p of r.problems) expect(p.message.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it('names the line and column of a syntax error, and refuses a list', () => {
    const r = parseValues('image:\n  tag: v2\n  bad: [v2\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]).toMatchObject({ line: expect.any(Number), column: expect.any(Number) });
    expect(parseValues('- a\n')).toMatchObject({
      ok: false,
      problems: [{ message: 'values must be a map (key: value), not a list' }],
    });
    expect(parseValues('')).toEqual({ ok: true, value: {} });
  });
});
