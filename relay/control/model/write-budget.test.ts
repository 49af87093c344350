import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { WriteBudget } from './write-budget.js';

describe('WriteBudget', () => {
  it('lets a key burst up to its budget, then refills it at the budget a minute', () => {
    const clock = new FakeClock();
    const budget = new WriteBudget(clock, { perMinute: 6, maxKeys: 10 });
    for (let i = 0; i < 6; i++) expect(budget.spend('k1')).toEqual({ ok: true });
    // One write every 10 s: the next is 10 s away.
    expect(budget.spend('k1')).toEqual({ ok: false, retryAfterMs: 10_000 });
    clock.advance(4_000);
    expect(budget.spend('k1')).toEqual({ ok: false, retryAfterMs: 6_000 });
    clock.advance(6_000);
    expect(budget.spend('k1')).toEqual({ ok: true });
    expect(budget.spend('k1').ok).toBe(false);
    expect(budget.refused).toBe(3);
    // Another key has its own bucket; a full bucket does not grow past the budget.
    expect(budget.spend('k2')).toEqual({ ok: true });
    clock.advance(3_600_000);
    for (let i = 0; i < 6; i++) expect(budget.spend('k1').ok).toBe(true);
    expect(budget.spend('k1').ok).toBe(false);
  });

  it('holds at most maxKeys buckets, dropping the one touched longest ago', () => {
    const clock = new FakeClock();
    const budget = new WriteBudget(clock, { perMinute: 1, maxKeys: 3 });
    for (const k of ['a', 'b', 'c']) expect(budget.spend(k).ok).toBe(true);
    expect(budget.spend('a').ok).toBe(false);
    expect(budget.spend('d').ok).toBe(true);
    expect(budget.size).toBe(3);
    // b was touched longest ago: dropped, so it starts full again; a (touched since) is still spent.
    expect(budget.spend('b').ok).toBe(true);
    expect(budget.spend('a').ok).toBe(false);
  });
});
