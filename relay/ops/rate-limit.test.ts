import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { FailureLimiter } from './rate-limit.js';

describe('FailureLimiter', () => {
  it('blocks after max failures within the window and forgets after it', () => {
    const clock = new FakeClock();
    const l = new FailureLimiter(clock, { max: 3, windowMs: 1000, maxEntries: 10 });
    for (let i = 0; i < 3; i++) {
      expect(l.blocked('a')).toBe(false);
      l.fail('a');
    }
    expect(l.blocked('a')).toBe(true);
    expect(l.blocked('b')).toBe(false);
    clock.advance(999);
    expect(l.blocked('a')).toBe(true);
    clock.advance(1);
    expect(l.blocked('a')).toBe(false);
    l.fail('a');
    expect(l.blocked('a')).toBe(false);
  });

  it('reports the remaining window, lists and clears keys', () => {
    const clock = new FakeClock();
    const l = new FailureLimiter(clock, { max: 2, windowMs: 1000, maxEntries: 10 });
    expect(l.fail('a').limited).toBe(false);
    clock.advance(300);
    const second = l.fail('a');
    expect(second).toMatchObject({ key: 'a', failures: 2, limited: true, remainingMs: 700 });
    l.fail('b');
    clock.advance(100);
    expect(l.limitOf('a')?.remainingMs).toBe(600);
    expect(l.limitOf('b')).toBeNull();
    // failures while limited do not extend the window
    l.fail('a');
    expect(l.limitOf('a')).toMatchObject({ failures: 3, remainingMs: 600 });
    expect(l.list().map((e) => [e.key, e.failures, e.limited])).toEqual([
      ['b', 1, false],
      ['a', 3, true],
    ]);
    expect(l.clear('a')).toMatchObject({ key: 'a', failures: 3 });
    expect(l.clear('a')).toBeNull();
    expect(l.blocked('a')).toBe(false);
    expect(l.clearAll().map((e) => e.key)).toEqual(['b']);
    expect(l.size).toBe(0);
    l.fail('c');
    clock.advance(1000);
    expect(l.list()).toEqual([]);
  });

  it('property: the map never exceeds maxEntries whatever the keys', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 4 }), { maxLength: 300 }),
        fc.integer({ min: 1, max: 20 }),
        (keys, cap) => {
          const l = new FailureLimiter(new FakeClock(), { max: 2, windowMs: 1000, maxEntries: cap });
          for (const k of keys) l.fail(k);
          expect(l.size).toBeLessThanOrEqual(cap);
          expect(l.size + l.evicted).toBeGreaterThanOrEqual(Math.min(new Set(keys).size, 1));
        },
      ),
    );
  });
});
