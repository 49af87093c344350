import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RingQueue } from './ring-queue.js';

type Op = { kind: 'push' | 'evict'; value: number } | { kind: 'shift' | 'peek' | 'clear' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('push' as const), value: fc.integer() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('evict' as const), value: fc.integer() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('shift' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('peek' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const) }) },
);

describe('RingQueue', () => {
  it('behaves as a bounded array FIFO under any sequence of operations', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 70 }), fc.array(op, { maxLength: 400 }), (capacity, ops) => {
        const queue = new RingQueue<number>({ capacity });
        const model: number[] = [];
        for (const o of ops) {
          if (o.kind === 'push') {
            const kept = model.length < capacity;
            if (kept) model.push(o.value);
            expect(queue.push(o.value)).toBe(kept);
          } else if (o.kind === 'evict') {
            const evicted = model.length >= capacity ? model.shift() : undefined;
            model.push(o.value);
            expect(queue.pushEvicting(o.value)).toBe(evicted);
          } else if (o.kind === 'shift') {
            expect(queue.shift()).toBe(model.shift());
          } else if (o.kind === 'peek') {
            expect(queue.peek()).toBe(model[0]);
          } else {
            queue.clear();
            model.length = 0;
          }
          expect(queue.length).toBe(model.length);
          expect(queue.full).toBe(model.length >= capacity);
        }
      }),
    );
  });

  it('grows past its first storage and wraps around in order', () => {
    const queue = new RingQueue<number>({ capacity: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 10; i++) queue.push(i);
    for (let i = 0; i < 7; i++) expect(queue.shift()).toBe(i);
    for (let i = 10; i < 1000; i++) queue.push(i);
    const out: number[] = [];
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) out.push(item);
    expect(out).toEqual(Array.from({ length: 993 }, (_, i) => i + 7));
  });

  it('refuses a capacity that is not a positive integer, naming it', () => {
    expect(() => new RingQueue({ capacity: 0 })).toThrow(/got 0/);
    expect(() => new RingQueue({ capacity: 2.5 })).toThrow(/got 2.5/);
    expect(() => new RingQueue({ capacity: Number.NaN })).toThrow(/got NaN/);
  });
});
