import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ageOf, formatAge } from './age.js';

const unitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

describe('formatAge', () => {
  it('prints kubectl-style ages', () => {
    expect(
      [0, 59_999, 60_000, 3 * 60_000 + 5, 2 * 3_600_000, 47 * 3_600_000, 5 * 86_400_000].map(formatAge),
    ).toEqual(['0s', '59s', '1m', '3m', '2h', '47h', '5d']);
    expect(formatAge(-5000)).toBe('0s');
  });

  it('is one whole unit count, never more than the duration and less than one unit short of it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 * 365 * 86_400_000 }), (ms) => {
        const m = /^(\d+)([smhd])$/.exec(formatAge(ms));
        expect(m).not.toBeNull();
        const [, n, unit] = m as RegExpExecArray;
        const size = unitMs[unit as keyof typeof unitMs];
        expect(Number(n) * size).toBeLessThanOrEqual(ms);
        expect(ms - Number(n) * size).toBeLessThan(size);
      }),
    );
  });

  it('never goes down as the duration grows', () => {
    const inMs = (s: string) => {
      const m = /^(\d+)([smhd])$/.exec(s) as RegExpExecArray;
      return Number(m[1]) * unitMs[m[2] as keyof typeof unitMs];
    };
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (a, b) => {
        expect(inMs(formatAge(Math.min(a, b)))).toBeLessThanOrEqual(inMs(formatAge(Math.max(a, b))));
      }),
    );
  });
});

describe('ageOf', () => {
  it('ages an ISO time, and shows "-" for none or garbage', () => {
    const now = Date.parse('2026-01-02T00:00:00Z');
    expect(ageOf('2026-01-01T23:57:00Z', now)).toBe('3m');
    expect(ageOf(null, now)).toBe('-');
    expect(ageOf('yesterday', now)).toBe('-');
  });
});
