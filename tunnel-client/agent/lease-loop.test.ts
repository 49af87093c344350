import { describe, expect, it } from 'vitest';
import type { LeaseReply } from '../../shared/api/lease.js';
import { FakeClock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { EARLY_RENEW_GAP_MS, LeaseLoop } from './lease-loop.js';

const flush = () => new Promise((r) => setImmediate(r));

function harness(script: Array<'ok' | 'fail'>, renewAfterSeconds = 60) {
  const clock = new FakeClock();
  const calls: number[] = [];
  const failures: Array<[number, number]> = [];
  let renewed = 0;
  let i = 0;
  const loop = new LeaseLoop({
    clock,
    random: () => 0.5, // no jitter: exact delays
    renew: async (): Promise<LeaseReply> => {
      calls.push(clock.now());
      const step = script[Math.min(i++, script.length - 1)];
      if (step === 'fail') throw new TunnelError('RELAY_UNREACHABLE', 'down');
      return { leaseDurationSeconds: 60, renewAfterSeconds, valuesVersion: 'v1' };
    },
    onRenewed: () => {
      renewed++;
    },
    onFailed: (_e, n, ms) => {
      failures.push([n, ms]);
    },
  });
  return { clock, loop, calls, failures, renewed: () => renewed };
}

async function advance(clock: FakeClock, ms: number) {
  clock.advance(ms);
  await flush();
}

describe('LeaseLoop', () => {
  it('renews at once, then every renewAfterSeconds', async () => {
    const h = harness(['ok'], 20);
    h.loop.start();
    await flush();
    expect(h.calls.length).toBe(1);
    await advance(h.clock, 19_999);
    expect(h.calls.length).toBe(1);
    await advance(h.clock, 1);
    expect(h.calls.length).toBe(2);
    await advance(h.clock, 20_000);
    expect(h.calls.length).toBe(3);
    expect(h.renewed()).toBe(3);
    h.loop.stop();
    await advance(h.clock, 100_000);
    expect(h.calls.length).toBe(3);
  });

  it('backs off 1, 2, 4, 8, 16, 30, 30 s while failing and resumes the schedule after a success', async () => {
    const h = harness(['fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'ok'], 60);
    h.loop.start();
    await flush();
    for (const ms of [1000, 2000, 4000, 8000, 16000, 30000, 30000]) await advance(h.clock, ms);
    expect(h.failures).toEqual([
      [1, 1000],
      [2, 2000],
      [3, 4000],
      [4, 8000],
      [5, 16000],
      [6, 30000],
      [7, 30000],
    ]);
    expect(h.renewed()).toBe(1);
    const n = h.calls.length;
    await advance(h.clock, 59_999);
    expect(h.calls.length).toBe(n);
    await advance(h.clock, 1);
    expect(h.calls.length).toBe(n + 1);
    h.loop.stop();
  });

  it('renewNow renews early, at most once per EARLY_RENEW_GAP_MS, then keeps the schedule', async () => {
    const h = harness(['ok'], 60);
    const t0 = h.clock.now();
    const at = () => h.calls.map((t) => t - t0);
    h.loop.start();
    await flush();
    expect(at()).toEqual([0]);
    await advance(h.clock, 1_000);
    h.loop.renewNow(); // 1 s after the last renewal started: waits for the gap
    h.loop.renewNow(); // asked twice: still one renewal
    await advance(h.clock, EARLY_RENEW_GAP_MS - 1_001);
    expect(at()).toEqual([0]);
    await advance(h.clock, 1);
    expect(at()).toEqual([0, EARLY_RENEW_GAP_MS]);
    await advance(h.clock, 30_000);
    h.loop.renewNow(); // the last one started 30 s ago: at once
    await advance(h.clock, 0);
    expect(at()).toEqual([0, EARLY_RENEW_GAP_MS, EARLY_RENEW_GAP_MS + 30_000]);
    await advance(h.clock, 60_000); // the period counts from the early renewal
    expect(h.calls.length).toBe(4);
    h.loop.stop();
  });

  it('an early renewal whose change went away by its time is called off; the regular one stands', async () => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const calls: number[] = [];
    let stillDue = true;
    const loop = new LeaseLoop({
      clock,
      random: () => 0.5,
      earlyStillDue: () => stillDue,
      renew: async (): Promise<LeaseReply> => {
        calls.push(clock.now() - t0);
        return { leaseDurationSeconds: 60, renewAfterSeconds: 60, valuesVersion: 'v1' };
      },
      onRenewed: () => {},
      onFailed: () => {},
    });
    loop.start();
    await flush();
    await advance(clock, 1_000);
    loop.renewNow(); // due at EARLY_RENEW_GAP_MS
    stillDue = false; // e.g. the relay connection dropped meanwhile
    await advance(clock, EARLY_RENEW_GAP_MS);
    expect(calls).toEqual([0]);
    await advance(clock, 60_000 - EARLY_RENEW_GAP_MS - 1_001);
    expect(calls).toEqual([0]);
    await advance(clock, 1);
    expect(calls).toEqual([0, 60_000]);
    stillDue = true;
    loop.renewNow(); // still taken when the change stands
    await advance(clock, EARLY_RENEW_GAP_MS);
    expect(calls).toEqual([0, 60_000, 60_000 + EARLY_RENEW_GAP_MS]);
    loop.stop();
  });

  it('renewNow during a renewal in flight renews again after it, past the gap', async () => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const calls: number[] = [];
    let release: (() => void) | undefined;
    const loop = new LeaseLoop({
      clock,
      random: () => 0.5,
      renew: async (): Promise<LeaseReply> => {
        calls.push(clock.now() - t0);
        if (calls.length === 1) await new Promise<void>((r) => (release = r));
        return { leaseDurationSeconds: 60, renewAfterSeconds: 60, valuesVersion: 'v1' };
      },
      onRenewed: () => {},
      onFailed: () => {},
    });
    loop.start();
    await flush();
    loop.renewNow();
    await advance(clock, 2_000);
    release?.();
    await flush();
    expect(calls).toEqual([0]);
    await advance(clock, EARLY_RENEW_GAP_MS - 2_000);
    expect(calls).toEqual([0, EARLY_RENEW_GAP_MS]);
    loop.stop();
  });

  it('renewNow while retrying after a failure leaves the backoff alone', async () => {
    const h = harness(['fail', 'ok'], 60);
    h.loop.start();
    await flush();
    h.loop.renewNow();
    await advance(h.clock, 999);
    expect(h.calls.length).toBe(1);
    await advance(h.clock, 1);
    expect(h.calls.length).toBe(2);
    h.loop.stop();
  });

  it('clamps an absurd renewAfterSeconds from the relay', async () => {
    const h = harness(['ok'], 0);
    h.loop.start();
    await flush();
    await advance(h.clock, 999);
    expect(h.calls.length).toBe(1);
    await advance(h.clock, 1);
    expect(h.calls.length).toBe(2);
    h.loop.stop();
  });
});
