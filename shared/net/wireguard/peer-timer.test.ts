import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { PeerTimer } from './peer-timer.js';

describe('PeerTimer', () => {
  it('fires once at the deadline; re-arming later or earlier moves it; disarm cancels it', () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    const t = new PeerTimer(clock, () => fired.push(clock.now()));
    t.arm(100);
    clock.advance(50);
    t.arm(100); // later: due 150, the clock timer set for 100 stays and re-arms itself
    expect(clock.pendingTimers).toBe(1);
    clock.advance(60);
    expect(fired).toEqual([]);
    expect(t.armed).toBe(true);
    clock.advance(40);
    expect(fired).toEqual([150]);
    expect(t.armed).toBe(false);
    t.arm(100);
    t.arm(10); // earlier: the clock timer is replaced
    clock.advance(10);
    expect(fired).toEqual([150, 160]);
    t.arm(20);
    t.disarm();
    clock.advance(100);
    expect(fired).toEqual([150, 160]);
    expect(clock.pendingTimers).toBe(0);
    t.arm(5);
    t.stop();
    expect(clock.pendingTimers).toBe(0);
    t.arm(5); // stopped for good
    expect(t.armed).toBe(false);
    clock.advance(10);
    expect(fired).toEqual([150, 160]);
  });

  it('per-packet arm/disarm keeps at most one clock timer', () => {
    const clock = new FakeClock(0);
    let n = 0;
    const t = new PeerTimer(clock, () => n++);
    for (let i = 0; i < 1000; i++) {
      t.arm(10_000);
      clock.advance(1);
      t.disarm();
      expect(clock.pendingTimers).toBeLessThanOrEqual(1);
    }
    clock.advance(20_000);
    expect(n).toBe(0);
  });

  it('property: fires exactly when a plain cancel-and-reschedule timer would', () => {
    type Op = { kind: 'arm'; ms: number } | { kind: 'disarm' } | { kind: 'wait'; ms: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.integer({ min: 0, max: 200 }).map((ms): Op => ({ kind: 'arm', ms })),
      fc.constant<Op>({ kind: 'disarm' }),
      fc.integer({ min: 0, max: 150 }).map((ms): Op => ({ kind: 'wait', ms })),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const clock = new FakeClock(0);
        const got: number[] = [];
        const t = new PeerTimer(clock, () => got.push(clock.now()));
        // Reference: one deadline, fired when time passes it.
        let due = Number.POSITIVE_INFINITY;
        const want: number[] = [];
        let now = 0;
        const step = (ms: number): void => {
          if (due <= now + ms) {
            want.push(due);
            due = Number.POSITIVE_INFINITY;
          }
          now += ms;
          clock.advance(ms);
        };
        for (const o of ops) {
          if (o.kind === 'arm') {
            due = now + o.ms;
            t.arm(o.ms);
          } else if (o.kind === 'disarm') {
            due = Number.POSITIVE_INFINITY;
            t.disarm();
          } else step(o.ms);
          expect(t.armed).toBe(due !== Number.POSITIVE_INFINITY);
        }
        step(500);
        expect(got).toEqual(want);
      }),
    );
  });
});
