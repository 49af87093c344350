import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from './clock.js';
import { TokenBucket } from './token-bucket.js';

describe('TokenBucket', () => {
  it('lets a burst through at once, then one per interval; nextAt says when', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ clock, burst: 3, intervalMs: 100 });
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([true, true, true, false]);
    expect(b.nextAt()).toBe(clock.now() + 100);
    clock.advance(99);
    expect(b.take()).toBe(false);
    clock.advance(1);
    expect(b.take()).toBe(true);
    expect(b.take()).toBe(false);
    clock.advance(10_000);
    expect(b.tokens).toBe(3);
    expect(b.nextAt()).toBe(clock.now());
  });

  it('refuses a burst under 1 or an interval that is not positive', () => {
    const clock = new FakeClock();
    expect(() => new TokenBucket({ clock, burst: 0, intervalMs: 10 })).toThrow(/burst 0/);
    expect(() => new TokenBucket({ clock, burst: 2.5, intervalMs: 10 })).toThrow(/burst 2.5/);
    expect(() => new TokenBucket({ clock, burst: 1, intervalMs: 0 })).toThrow(/interval 0/);
  });

  it('never lets more than burst + elapsed / interval takes through, however they are spread', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 300 }),
        (burst, intervalMs, gaps) => {
          const clock = new FakeClock();
          const start = clock.now();
          const b = new TokenBucket({ clock, burst, intervalMs });
          let taken = 0;
          for (const gap of gaps) {
            clock.advance(gap);
            if (b.take()) taken++;
            // A take refused now succeeds at nextAt() (and not before, unless it is now).
            const at = b.nextAt();
            expect(at).toBeGreaterThanOrEqual(clock.now());
          }
          expect(taken).toBeLessThanOrEqual(burst + Math.floor((clock.now() - start) / intervalMs));
        },
      ),
    );
  });

  it('a take refused at one time succeeds once nextAt() is reached', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 777 }), (burst, intervalMs) => {
        const clock = new FakeClock();
        const b = new TokenBucket({ clock, burst, intervalMs });
        while (b.take());
        const at = b.nextAt();
        clock.advance(at - clock.now() - 1);
        expect(b.take()).toBe(false);
        clock.advance(1);
        expect(b.take()).toBe(true);
      }),
    );
  });
});
