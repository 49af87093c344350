import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../shared/clock.js';
import { DEFAULT_DERP_LIMITS, restartWindowMs } from './derp/limits.js';
import { DrainState } from './drain.js';

describe('DrainState', () => {
  it('starts once, telling its listeners once', () => {
    const d = new DrainState(new FakeClock());
    let told = 0;
    d.onStart(() => told++);
    expect(d.draining).toBe(false);
    expect(d.start()).toBe(true);
    expect(d.start()).toBe(false);
    expect(d.draining).toBe(true);
    expect(told).toBe(1);
  });

  it('whenIdle waits notBeforeMs, then until nothing is in flight', async () => {
    const clock = new FakeClock();
    const d = new DrainState(clock);
    let streams = 2;
    d.track({ name: 'hub streams', count: () => streams });
    let result: Record<string, number> | null = null;
    void d.whenIdle({ timeoutMs: 8_000, notBeforeMs: 1_000 }).then((r) => {
      result = r;
    });
    streams = 0;
    clock.advance(999);
    await Promise.resolve();
    expect(result).toBeNull();
    streams = 1;
    clock.advance(1_000);
    await Promise.resolve();
    expect(result).toBeNull();
    streams = 0;
    clock.advance(50);
    await Promise.resolve();
    expect(result).toEqual({});
  });

  it('whenIdle gives up at its timeout with what was still in flight', async () => {
    const clock = new FakeClock();
    const d = new DrainState(clock);
    const untrack = d.track({ name: 'hub streams', count: () => 3 });
    d.track({ name: 'other', count: () => 0 });
    const done = d.whenIdle({ timeoutMs: 2_000, notBeforeMs: 1_000 });
    clock.advance(2_000);
    expect(await done).toEqual({ 'hub streams': 3 });
    untrack();
    expect(d.inFlight()).toEqual({});
  });
});

describe('restartWindowMs', () => {
  it('is the minimum for a few agents, spreads thousands at the configured rate, and stops at the maximum', () => {
    const l = DEFAULT_DERP_LIMITS;
    expect(restartWindowMs(l, 1)).toBe(l.restartReconnectInMs);
    expect(restartWindowMs(l, 4_000)).toBe((4_000 / l.restartReconnectsPerSecond) * 1000);
    expect(restartWindowMs(l, 1_000_000)).toBe(l.restartMaxReconnectInMs);
    fc.assert(
      fc.property(fc.nat(100_000), fc.nat(100_000), (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const w = restartWindowMs(l, lo);
        expect(w).toBeGreaterThanOrEqual(l.restartReconnectInMs);
        expect(w).toBeLessThanOrEqual(l.restartMaxReconnectInMs);
        expect(restartWindowMs(l, hi)).toBeGreaterThanOrEqual(w);
      }),
    );
  });
});
