import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastSeenText, shortAge } from './last-seen.js';

describe('shortAge / lastSeenText', () => {
  it('picks the largest whole unit', () => {
    expect(shortAge(-5)).toBe('0s');
    expect(shortAge(999)).toBe('0s');
    expect(shortAge(45_000)).toBe('45s');
    expect(shortAge(125_000)).toBe('2m');
    expect(shortAge(3 * 3_600_000 + 59_000)).toBe('3h');
    expect(shortAge(4 * 86_400_000)).toBe('4d');
    expect(lastSeenText(null, 10)).toBe('(never seen)');
    expect(lastSeenText(1_000, 121_000)).toBe('(last seen 2m ago)');
  });

  it('the number times its unit never exceeds the age, and the next unit up would', () => {
    const unitMs: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
    fc.assert(
      fc.property(fc.integer({ min: 1_000, max: 400 * 86_400_000 }), (age) => {
        const m = /^(\d+)([smhd])$/.exec(shortAge(age));
        expect(m).not.toBeNull();
        const n = Number(m![1]);
        const u = unitMs[m![2]!]!;
        expect(n * u).toBeLessThanOrEqual(age);
        expect((n + 1) * u).toBeGreaterThan(age);
        if (m![2] !== 'd') expect(n * u).toBeLessThan(u === 3_600_000 ? 86_400_000 : u * 60);
      }),
    );
  });
});
