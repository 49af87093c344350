import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BACKOFF_CAP_MS, Backoff, jittered } from './backoff.js';

describe('Backoff', () => {
  it('doubles from 1 s and never exceeds 30 s, whatever the randomness', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 0.9999999, noNaN: true }), { minLength: 1, maxLength: 60 }),
        (rs) => {
          let i = 0;
          const b = new Backoff({ random: () => rs[i++ % rs.length]! });
          let prevBase = 0;
          for (let n = 0; n < rs.length; n++) {
            const d = b.next();
            const base = Math.min(BACKOFF_CAP_MS, 1000 * 2 ** n);
            expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
            expect(d).toBeLessThanOrEqual(Math.min(BACKOFF_CAP_MS, Math.ceil(base * 1.2)));
            expect(base).toBeGreaterThanOrEqual(prevBase);
            prevBase = base;
          }
          expect(b.attempts).toBe(rs.length);
        },
      ),
    );
  });

  it('without jitter gives exactly 1, 2, 4, 8, 16, 30, 30 s and restarts after reset', () => {
    const b = new Backoff({ jitter: 0 });
    expect(Array.from({ length: 7 }, () => b.next())).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    b.reset();
    expect(b.next()).toBe(1000);
  });

  it('jittered stays within +-fraction', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.9999999, noNaN: true }),
        (ms, f, r) => {
          const d = jittered(ms, f, () => r);
          expect(d).toBeGreaterThanOrEqual(Math.floor(ms * (1 - f)) - 1);
          expect(d).toBeLessThanOrEqual(Math.ceil(ms * (1 + f)) + 1);
        },
      ),
    );
  });
});
