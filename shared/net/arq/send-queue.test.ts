import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BufferPool, POOLED_MIN_BYTES, PoolBudget } from '../buffers/buffer-pool.js';
import { SendQueue } from './send-queue.js';

describe('SendQueue', () => {
  it('property: cuts any sequence of writes into segments of their own that reassemble to the same bytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 12_000 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 500, max: 20_000 }),
        fc.boolean(),
        (sizes, mss, pooled) => {
          const pool = pooled ? new BufferPool(16_384, { budget: new PoolBudget(1 << 20) }) : null;
          const q = new SendQueue();
          const written = sizes.map((n) => randomBytes(n));
          const original = Buffer.concat(written);
          for (const b of written) q.push(b);
          expect(q.bytes).toBe(original.length);
          const out: Buffer[] = [];
          while (q.bytes > 0) {
            const before = q.bytes;
            const seg = q.take(mss, pool);
            expect(seg.length).toBe(Math.min(mss, before));
            expect(q.bytes).toBe(before - seg.length);
            // Never a view into a written buffer: those may die as soon as they are cut.
            expect(written.some((w) => w.buffer === seg.buffer)).toBe(false);
            const fromPool = pool?.owns(seg) ?? false;
            expect(fromPool).toBe(pool !== null && seg.length >= POOLED_MIN_BYTES && seg.length <= pool.size);
            out.push(Buffer.from(seg));
          }
          // The segments own their bytes: scribbling over the written buffers changes nothing.
          for (const w of written) w.fill(0xee);
          expect(Buffer.concat(out).equals(original)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('clear() drops everything queued', () => {
    const q = new SendQueue();
    q.push(Buffer.alloc(100, 1));
    q.push(Buffer.alloc(50, 2));
    q.take(120);
    expect(q.bytes).toBe(30);
    q.clear();
    expect(q.bytes).toBe(0);
    q.push(Buffer.from([9, 8, 7]));
    expect([...q.take(10)]).toEqual([9, 8, 7]);
  });
});
