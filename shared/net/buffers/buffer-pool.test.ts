import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import {
  BufferPool,
  handDown,
  isHandedDown,
  MAX_SHARED_POOLS,
  POOL_FREE_BYTES_CAP,
  PoolBudget,
  poolFor,
  processBudget,
} from './buffer-pool.js';
import { SendSink } from './send-sink.js';

/** The bottom of a send path (it gives handed-down memory back). */
const sink = new SendSink<never>({ counter: { drop: () => {} } });

const pool = (size: number, cap = 1 << 20, poison?: number) =>
  new BufferPool(size, { budget: new PoolBudget(cap), ...(poison === undefined ? {} : { poison }) });

describe('BufferPool', () => {
  it('hands out buffers of its size, each with memory of its own, and reuses the ones given back', () => {
    const p = pool(1000);
    const a = p.take();
    const b = p.take();
    expect(a.length).toBe(1000);
    expect(a.byteOffset).toBe(0);
    expect(a.buffer.byteLength).toBe(1000);
    expect(a.buffer).not.toBe(b.buffer);
    expect(p.stats.fresh).toBe(2);
    expect(p.give(a)).toBe(true);
    expect(p.freeCount).toBe(1);
    const c = p.take();
    expect(c.buffer).toBe(a.buffer);
    expect(p.stats).toMatchObject({ takes: 3, fresh: 2, kept: 1, refused: 0 });
  });

  it('refuses a second give of the same buffer, and the free list never holds it twice', () => {
    const p = pool(64);
    const a = p.take();
    expect(p.give(a)).toBe(true);
    expect(p.give(a)).toBe(false);
    expect(p.give(a.subarray(3, 9))).toBe(false);
    expect(p.freeCount).toBe(1);
    expect(p.stats.refused).toBe(2);
    const x = p.take();
    const y = p.take();
    expect(x.buffer).not.toBe(y.buffer);
  });

  it('refuses foreign buffers: a plain one, a view of it, and one from another pool of the same size', () => {
    const p = pool(64);
    const q = pool(64);
    const foreign = Buffer.allocUnsafeSlow(64);
    const theirs = q.take();
    expect(p.give(foreign)).toBe(false);
    expect(p.give(foreign.subarray(1))).toBe(false);
    expect(p.give(theirs)).toBe(false);
    expect(p.stats.refused).toBe(3);
    expect(p.freeCount).toBe(0);
    expect(q.give(theirs)).toBe(true); // still q's to take back
  });

  it('accepts a view of a taken buffer in its place and keeps the whole buffer', () => {
    const p = pool(256);
    const a = p.take();
    expect(p.give(a.subarray(10, 20))).toBe(true);
    const b = p.take();
    expect(b.length).toBe(256);
    expect(b.buffer).toBe(a.buffer);
  });

  it('caps the bytes on the free lists of one budget across pools, discarding beyond it', () => {
    const budget = new PoolBudget(10_000);
    const p = new BufferPool(3000, { budget });
    const q = new BufferPool(2000, { budget });
    const ps = [p.take(), p.take(), p.take(), p.take()];
    const qs = [q.take(), q.take()];
    for (const b of ps) p.give(b);
    expect(budget.freeBytes).toBe(9000);
    expect(p.stats).toMatchObject({ kept: 3, discarded: 1 });
    for (const b of qs) q.give(b);
    expect(budget.freeBytes).toBe(9000); // 2000 more would pass 10,000
    expect(q.stats.discarded).toBe(2);
    p.take();
    expect(budget.freeBytes).toBe(6000);
    q.give(q.take());
    expect(budget.freeBytes).toBe(8000);
    p.drain();
    expect(budget.freeBytes).toBe(2000);
  });

  it('property: any sequence of takes and gives (valid, repeated, foreign) keeps the books straight', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('take', 'give', 'again', 'foreign'), fc.nat(50)), {
          maxLength: 200,
        }),
        fc.integer({ min: 0, max: 12 }),
        (ops, capBuffers) => {
          const size = 100;
          const budget = new PoolBudget(capBuffers * size);
          const p = new BufferPool(size, { budget, poison: 0xa5 });
          const held: Buffer[] = [];
          const given: Buffer[] = [];
          let refusedWant = 0;
          for (const [op, i] of ops) {
            if (op === 'take') {
              const b = p.take();
              // Never one that is held by someone else.
              expect(held.some((h) => h.buffer === b.buffer)).toBe(false);
              b.fill(held.length & 0xff);
              held.push(b);
            } else if (op === 'give' && held.length > 0) {
              const b = held.splice(i % held.length, 1)[0]!;
              expect(p.give(b)).toBe(true);
              given.push(b);
            } else if (op === 'again' && given.length > 0) {
              const b = given[i % given.length]!;
              if (!held.some((h) => h.buffer === b.buffer)) {
                expect(p.give(b)).toBe(false);
                refusedWant++;
              }
            } else if (op === 'foreign') {
              expect(p.give(Buffer.alloc(size))).toBe(false);
              refusedWant++;
            }
            expect(budget.freeBytes).toBe(p.freeCount * size);
            expect(budget.freeBytes).toBeLessThanOrEqual(budget.capBytes);
          }
          expect(p.stats.refused).toBe(refusedWant);
          expect(p.stats.kept + p.stats.discarded).toBe(given.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('poisons what is given back (tests see reads of freed memory)', () => {
    const p = pool(32, 1 << 20, 0x5a);
    const a = p.take();
    a.fill(1);
    p.give(a);
    expect(a.every((x) => x === 0x5a)).toBe(true);
  });

  it('rejects a size that is not a positive integer', () => {
    for (const s of [0, -1, 1.5, Number.NaN]) {
      let err: unknown;
      try {
        new BufferPool(s);
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    }
  });
});

describe('poolFor', () => {
  it('shares one pool per size within the process, on the process budget', () => {
    expect(poolFor(12_345)).toBe(poolFor(12_345));
    expect(poolFor(12_345)).not.toBe(poolFor(12_346));
    expect(processBudget.capBytes).toBe(POOL_FREE_BYTES_CAP);
  });

  it('keeps at most MAX_SHARED_POOLS sizes (later sizes get pools of their own)', () => {
    for (let i = 0; i < MAX_SHARED_POOLS + 4; i++) poolFor(20_000 + i);
    const last = 20_000 + MAX_SHARED_POOLS + 3;
    expect(poolFor(last)).not.toBe(poolFor(last));
  });
});

describe('handDown / SendSink.sent', () => {
  it('gives back memory handed down whole, once, from any view of it (as grown by the layers below)', () => {
    const p = pool(2000);
    const raw = p.take();
    const datagram = raw.subarray(100, 1500);
    handDown(p, raw);
    expect(isHandedDown(datagram)).toBe(true);
    const frame = Buffer.from(datagram.buffer, 60, 1500); // grown in place by headers below
    expect(sink.sent(frame)).toBe(true);
    expect(p.freeCount).toBe(1);
    expect(sink.sent(frame)).toBe(false);
    expect(sink.sent(datagram)).toBe(false);
    expect(p.freeCount).toBe(1);
    expect(p.stats.refused).toBe(0);
  });

  it('does nothing for memory never handed down: a copy, a plain buffer, a pooled buffer still owned', () => {
    const p = pool(2000);
    const owned = p.take();
    expect(sink.sent(owned)).toBe(false);
    handDown(p, owned);
    const copy = Buffer.from(owned.subarray(0, 100));
    expect(sink.sent(copy)).toBe(false);
    expect(sink.sent(Buffer.alloc(10))).toBe(false);
    expect(p.freeCount).toBe(0);
    // Handing down a buffer the pool does not hold as taken marks nothing.
    const foreign = Buffer.allocUnsafeSlow(2000);
    handDown(p, foreign);
    expect(isHandedDown(foreign)).toBe(false);
  });

  it('a buffer given back directly is no longer handed down', () => {
    const p = pool(2000);
    const raw = p.take();
    handDown(p, raw);
    p.give(raw);
    expect(isHandedDown(raw)).toBe(false);
    expect(sink.sent(raw)).toBe(false);
    expect(p.stats.refused).toBe(0);
  });
});
