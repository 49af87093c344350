import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { DEFAULT_DERP_LIMITS, restartWindowMs } from '../data/derp/limits.js';
import { DrainState } from './drain.js';

/** Lets resolved promise chains run. */
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

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
    await flush();
    expect(result).toBeNull();
    streams = 1;
    clock.advance(1_000);
    await flush();
    expect(result).toBeNull();
    streams = 0;
    clock.advance(50);
    await flush();
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

describe('DrainState moving and quiet', () => {
  it('runs the move listeners in order, each awaited', async () => {
    const d = new DrainState(new FakeClock());
    const seen: string[] = [];
    d.onMove(async () => {
      await Promise.resolve();
      seen.push('mesh');
    });
    const off = d.onMove(() => {
      seen.push('removed');
    });
    d.onMove(() => {
      seen.push('data plane');
    });
    off();
    await d.moveAgents();
    expect(seen).toEqual(['mesh', 'data plane']);
  });

  it('whenQuiet resolves once no activity was noted for quietMs, or false at its timeout', async () => {
    const clock = new FakeClock();
    const d = new DrainState(clock);
    let quiet: boolean | null = null;
    void d.whenQuiet({ quietMs: 1_000, timeoutMs: 5_000 }).then((q) => {
      quiet = q;
    });
    for (let i = 0; i < 10; i++) {
      clock.advance(300);
      d.noteActivity();
    }
    await flush();
    expect(quiet).toBeNull();
    clock.advance(1_050);
    await flush();
    expect(quiet).toBe(true);
    const busy = d.whenQuiet({ quietMs: 1_000, timeoutMs: 2_000 });
    for (let i = 0; i < 10; i++) {
      clock.advance(250);
      d.noteActivity();
    }
    expect(await busy).toBe(false);
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
