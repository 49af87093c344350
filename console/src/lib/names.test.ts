import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isDns1123Label, nameFromDisplayName, nameProblem } from './names.js';

describe('nameFromDisplayName', () => {
  it('always gives a DNS-1123 label that is not taken', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 120 }),
        fc.array(fc.string({ maxLength: 70 }), { maxLength: 5 }),
        (display, extra) => {
          const first = nameFromDisplayName(display);
          const taken = new Set([first, `${first.slice(0, 61)}-2`, ...extra]);
          const name = nameFromDisplayName(display, taken);
          expect(isDns1123Label(name)).toBe(true);
          expect(taken.has(name)).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads like the display name', () => {
    expect(nameFromDisplayName('Edge Café #1')).toBe('edge-cafe-1');
    expect(nameFromDisplayName('  <img src=x onerror=alert(1)>  ')).toBe('img-src-x-onerror-alert-1');
    expect(nameFromDisplayName('!!!')).toBe('cluster');
    expect(nameFromDisplayName('prod', new Set(['prod', 'prod-2']))).toBe('prod-3');
  });
});

describe('nameProblem', () => {
  it('is null exactly for DNS-1123 labels', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 70 }), (s) => {
        expect(nameProblem(s) === null).toBe(isDns1123Label(s));
      }),
      { numRuns: 500 },
    );
  });

  it('names what is wrong', () => {
    expect(nameProblem('Edge')).toContain('"E" is not allowed');
    expect(nameProblem('-edge')).toBe('must start with a letter or digit');
    expect(nameProblem('a'.repeat(64))).toBe('64 characters: at most 63');
  });
});
