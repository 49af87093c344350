import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { RateLimiter } from './rate-limiter.js';

describe('RateLimiter (20/s, burst 5)', () => {
  it('allows a burst of 5, then 20 per second, per source', () => {
    const c = new FakeClock();
    const r = new RateLimiter(c);
    const burst = Array.from({ length: 7 }, () => r.allow('x'));
    expect(burst).toEqual([true, true, true, true, true, false, false]);
    expect(r.allow('y')).toBe(true); // another source has its own bucket
    c.advance(50); // one token per 50 ms
    expect(r.allow('x')).toBe(true);
    expect(r.allow('x')).toBe(false);
    c.advance(10_000);
    expect(Array.from({ length: 6 }, () => r.allow('x')).filter(Boolean).length).toBe(5);
  });

  it('tracks a bounded number of sources, evicting the oldest', () => {
    const r = new RateLimiter(new FakeClock(), 20, 5, 3);
    for (const s of ['a', 'b', 'c', 'd']) r.allow(s);
    expect(r.size).toBe(3);
  });
});
