import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { ReplayGuard } from './replay-guard.js';

const a = generateKeyPair().publicKey;
const b = generateKeyPair().publicKey;
const tx = (n: number) => Buffer.from(n.toString(16).padStart(24, '0'), 'hex');

describe('disco replay guard', () => {
  it('accepts a message once; the same txid again is a replay, from another sender it is not', () => {
    const clock = new FakeClock();
    const g = new ReplayGuard({ clock });
    const now = clock.wallNow();
    expect(g.check(a, tx(1), now)).toBeNull();
    expect(g.check(a, tx(1), now)).toBe('replay');
    expect(g.check(b, tx(1), now)).toBeNull();
  });

  it('refuses sentAt outside the window either way', () => {
    const clock = new FakeClock();
    const g = new ReplayGuard({ clock, windowMs: 10_000 });
    const now = clock.wallNow();
    expect(g.check(a, tx(1), now - 10_001)).toBe('stale');
    expect(g.check(a, tx(2), now + 10_001)).toBe('future');
    expect(g.check(a, tx(3), now - 10_000)).toBeNull();
    expect(g.check(a, tx(4), now + 10_000)).toBeNull();
    clock.advance(10_001);
    expect(g.check(a, tx(5), now - 1)).toBe('stale');
  });

  it('once it forgets a txid, it refuses everything sent at or before it', () => {
    const clock = new FakeClock();
    const g = new ReplayGuard({ clock, perSender: 2 });
    const t0 = clock.wallNow();
    expect(g.check(a, tx(1), t0 + 1)).toBeNull();
    expect(g.check(a, tx(2), t0 + 2)).toBeNull();
    expect(g.check(a, tx(3), t0 + 3)).toBeNull(); // forgets tx 1: floor t0+1
    expect(g.check(a, tx(1), t0 + 1)).toBe('replay');
    expect(g.check(a, tx(9), t0 + 1)).toBe('replay'); // same instant as the floor
    expect(g.check(a, tx(2), t0 + 2)).toBe('replay'); // still remembered
    expect(g.check(a, tx(4), t0 + 2)).toBeNull(); // above the floor, new txid
  });

  it('caps senders: forgetting one raises every floor to its newest message', () => {
    const clock = new FakeClock();
    const g = new ReplayGuard({ clock, maxSenders: 1 });
    const t0 = clock.wallNow();
    expect(g.check(a, tx(1), t0 + 5)).toBeNull();
    expect(g.check(b, tx(1), t0 + 6)).toBeNull(); // forgets a
    expect(g.senders).toBe(1);
    expect(g.check(a, tx(1), t0 + 5)).toBe('replay');
    expect(g.check(a, tx(2), t0 + 7)).toBeNull();
  });

  it('never accepts one message twice, whatever the order, delays and caps (property)', () => {
    const keys = [a, b, generateKeyPair().publicKey];
    // A message is (sender, txid, sentAt offset); a delivery replays one of them at some later time.
    const arbMessage = fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: -900, max: 900 }));
    fc.assert(
      fc.property(
        fc.array(arbMessage, { minLength: 1, maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 300 })), { maxLength: 200 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 3 }),
        (messages, deliveries, perSender, maxSenders) => {
          const clock = new FakeClock();
          const t0 = clock.wallNow();
          const g = new ReplayGuard({ clock, perSender, maxSenders, windowMs: 1_000 });
          const accepted = new Set<number>();
          for (const [pick, wait] of deliveries) {
            clock.advance(wait);
            const i = pick % messages.length;
            const [k, offset] = messages[i]!;
            if (g.check(keys[k]!, tx(i), t0 + offset) === null) {
              expect(accepted.has(i)).toBe(false);
              accepted.add(i);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
