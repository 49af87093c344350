import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { PendingAcks } from './pending-acks.js';

/** Every pending ACK as [sn, ts, heldMs], taken at `now`. */
function takeAll(p: PendingAcks, now: number): number[][] {
  const out: number[][] = [];
  p.take(now, (sn, ts, held) => out.push([sn, ts, held]));
  return out;
}

describe('PendingAcks', () => {
  it('is due at ackEvery pending, at the oldest one plus the delay, or when asked', () => {
    const p = new PendingAcks({ ackEvery: 3, ackDelayMs: 2 });
    expect(p.dueAt).toBe(Number.POSITIVE_INFINITY);
    expect(p.due(100)).toBe(false);
    p.add(1, 11, 100);
    p.add(2, 12, 100.5);
    expect(p.dueAt).toBe(102);
    expect(p.due(101.9)).toBe(false);
    expect(p.due(102)).toBe(true);
    p.add(3, 13, 101);
    expect(p.due(101)).toBe(true);
    expect(takeAll(p, 101.25)).toEqual([
      [1, 11, 1.25],
      [2, 12, 0.75],
      [3, 13, 0.25],
    ]);
    expect(p.count).toBe(0);
    p.add(4, 14, 200);
    expect(p.due(200)).toBe(false);
    p.ackNow();
    expect(p.due(200)).toBe(true);
    takeAll(p, 200);
    p.add(5, 15, 201);
    expect(p.due(201)).toBe(false); // the request was answered by that take
  });

  it('gives the ACKs below the cumulative sn as one (the highest, across the u32 wrap), the others each', () => {
    const p = new PendingAcks({ ackEvery: 8, ackDelayMs: 1 });
    const top = 0xffff_ffff;
    for (const [sn, at] of [
      [top - 1, 10],
      [5, 11],
      [top, 12],
      [7, 13],
      [0, 14],
    ] as const) {
      p.add(sn, sn + 1000, at);
    }
    const out: number[][] = [];
    p.take(20, (sn, ts, held) => out.push([sn, ts, held]), 1); // next expected: 1 (0 and the two before it in)
    expect(out).toEqual([
      [5, 1005, 9],
      [7, 1007, 7],
      [0, 1000, 6],
    ]);
    expect(p.count).toBe(0);
  });

  it('with holdShort, holds a short segment for the delay even at ackEvery 1; a full one goes at once', () => {
    const p = new PendingAcks({ ackEvery: 1, ackDelayMs: 2, holdShort: true });
    p.add(1, 11, 100, true);
    expect(p.due(100)).toBe(false);
    expect(p.due(101.9)).toBe(false);
    expect(p.due(102)).toBe(true);
    p.add(2, 12, 100.5, false);
    expect(p.due(100.5)).toBe(true);
    expect(takeAll(p, 100.5)).toHaveLength(2);
    expect(p.due(200)).toBe(false);
    // Without holdShort a short one counts like any other.
    const q = new PendingAcks({ ackEvery: 1, ackDelayMs: 2 });
    q.add(1, 11, 100, true);
    expect(q.due(100)).toBe(true);
  });

  it('with holdShort, lets go of 8 x ackEvery held short segments, and of what it held when the policy drops it', () => {
    const p = new PendingAcks({ ackEvery: 1, ackDelayMs: 2, holdShort: true });
    for (let sn = 0; sn < 7; sn++) p.add(sn, sn, 100, true);
    expect(p.due(100)).toBe(false);
    p.add(7, 7, 100, true);
    expect(p.due(100)).toBe(true);
    takeAll(p, 100);
    p.add(8, 8, 100, true);
    expect(p.due(100)).toBe(false);
    p.setPolicy({ ackEvery: 1, ackDelayMs: 2 });
    expect(p.due(100)).toBe(true);
    expect(p.policy).toEqual({ ackEvery: 1, ackDelayMs: 2 });
  });

  it('applies a new policy to the ACKs already pending', () => {
    const p = new PendingAcks({ ackEvery: 4, ackDelayMs: 1 });
    p.add(1, 1, 50);
    p.add(2, 2, 50);
    expect(p.due(50)).toBe(false);
    p.setPolicy({ ackEvery: 1, ackDelayMs: 10 });
    expect(p.due(50)).toBe(true);
    expect(p.dueAt).toBe(60);
    expect(p.policy).toEqual({ ackEvery: 1, ackDelayMs: 10 });
  });

  it('rejects a bad policy with BAD_CONFIG naming the value', () => {
    const p = new PendingAcks({ ackEvery: 1, ackDelayMs: 0 });
    for (const bad of [
      { ackEvery: 0, ackDelayMs: 1 },
      { ackEvery: 1.5, ackDelayMs: 1 },
      { ackEvery: 2000, ackDelayMs: 1 },
      { ackEvery: 2, ackDelayMs: -1 },
      { ackEvery: 2, ackDelayMs: Number.NaN },
    ]) {
      let err: unknown;
      try {
        p.setPolicy(bad);
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
      expect(String(err)).toMatch(/ackEvery: (0|1\.5|2000)|ackDelayMs: (-1|NaN)/);
    }
    expect(p.policy).toEqual({ ackEvery: 1, ackDelayMs: 0 });
  });

  it('hands out every pending ACK once, oldest first, held exactly since its arrival (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 0, max: 50 }),
        fc.array(fc.tuple(fc.nat({ max: 0xffffffff }), fc.nat({ max: 20 })), { maxLength: 40 }),
        (ackEvery, ackDelayMs, arrivals) => {
          const p = new PendingAcks({ ackEvery, ackDelayMs });
          let now = 1000;
          const expected: number[][] = [];
          const got: number[][] = [];
          for (const [sn, gap] of arrivals) {
            now += gap;
            p.add(sn, sn ^ 0x5a5a, now);
            expected.push([sn, sn ^ 0x5a5a, now]);
            const oldest = expected[0]![2]!;
            const due = expected.length >= ackEvery || now >= oldest + ackDelayMs;
            expect(p.due(now)).toBe(due);
            if (due) {
              for (const [s, t, held] of takeAll(p, now)) got.push([s!, t!, now - held!]);
              expect(got.slice(-expected.length)).toEqual(expected);
              expected.length = 0;
            }
          }
          expect(p.count).toBe(expected.length);
        },
      ),
    );
  });
});
