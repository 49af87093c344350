import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type HandshakeSlot, HandshakeSlots, type SlotCounters } from './handshake-slots.js';

const counters = (): SlotCounters => ({ handshaking: 0, refusedSourceLimit: 0, handshakeEvictions: 0 });

type Op = { kind: 'take'; source: number } | { kind: 'prove' | 'release'; pick: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), source: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ kind: fc.constantFrom('prove' as const, 'release' as const), pick: fc.nat() }),
);

describe('HandshakeSlots', () => {
  it('caps per source, evicts the oldest waiting slot when full, never a proved one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { maxLength: 80 }),
        (maxTotal, maxPerSource, ops) => {
          const c = counters();
          const table = new HandshakeSlots({ maxTotal, maxPerSource, counters: c });
          const live: HandshakeSlot[] = []; // held, in taking order
          const cut = new Set<HandshakeSlot>();
          for (const o of ops) {
            if (o.kind === 'take') {
              const source = `s${o.source}`;
              const fromSource = live.filter((s) => s.source === source).length;
              const oldestWaiting = live.find((s) => s.state === 'waiting');
              const evictions = c.handshakeEvictions;
              const r = table.take(source, () => cut.add(r as HandshakeSlot));
              if (fromSource >= maxPerSource) {
                expect(r).toBe('source_limit');
              } else if (live.length >= maxTotal && !oldestWaiting) {
                expect(r).toBe('full');
              } else {
                expect(typeof r).toBe('object');
                if (live.length >= maxTotal) {
                  expect(c.handshakeEvictions).toBe(evictions + 1);
                  expect(oldestWaiting!.state).toBe('released');
                  live.splice(live.indexOf(oldestWaiting!), 1);
                }
                live.push(r as HandshakeSlot);
              }
            } else if (live.length > 0) {
              const slot = live[o.pick % live.length]!;
              if (o.kind === 'prove') slot.prove();
              else {
                slot.release();
                slot.release();
                live.splice(live.indexOf(slot), 1);
              }
            }
            expect(table.held).toBe(live.length);
            expect(c.handshaking).toBe(live.length);
            expect(table.held).toBeLessThanOrEqual(maxTotal);
            for (const s of live) expect(table.heldBy(s.source)).toBeLessThanOrEqual(maxPerSource);
          }
          expect(cut.size).toBe(c.handshakeEvictions);
          for (const s of cut) expect(s.state).toBe('released');
        },
      ),
      { numRuns: 500 },
    );
  });

  it('forgets a source once its last slot is released', () => {
    const table = new HandshakeSlots({ maxTotal: 4, maxPerSource: 2, counters: counters() });
    const a = table.take('a', () => {});
    const b = table.take('a', () => {});
    expect(table.take('a', () => {})).toBe('source_limit');
    if (typeof a === 'string' || typeof b === 'string') throw new Error('expected slots');
    a.release();
    b.release();
    expect(table.heldBy('a')).toBe(0);
    expect(typeof table.take('a', () => {})).toBe('object');
  });
});
