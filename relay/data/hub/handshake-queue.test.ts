/** The bounded handshake FIFO on a hand-driven scheduler: batches per turn, order, cap, close. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HANDSHAKE_BATCH, HANDSHAKE_QUEUE_CAP, HandshakeQueue } from './handshake-queue.js';

function manual() {
  const turns: Array<() => void> = [];
  return {
    turns,
    defer: (fn: () => void) => void turns.push(fn),
    /** Runs one scheduled turn; false when none was scheduled. */
    step(): boolean {
      const fn = turns.shift();
      fn?.();
      return fn !== undefined;
    },
  };
}

describe('HandshakeQueue', () => {
  it('handles at most `batch` items per deferred turn, in arrival order, one turn scheduled at a time', () => {
    const s = manual();
    const out: number[] = [];
    const q = new HandshakeQueue<number>({ handle: (n) => out.push(n), defer: s.defer, batch: 4 });
    for (let i = 0; i < 10; i++) expect(q.push(i)).toBe(true);
    expect(out).toEqual([]); // nothing runs inside push
    expect(s.turns.length).toBe(1);
    expect(s.step()).toBe(true);
    expect(out).toEqual([0, 1, 2, 3]);
    expect(q.depth).toBe(6);
    s.step();
    expect(out.length).toBe(8);
    s.step();
    expect(out).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(s.step()).toBe(false); // empty: no turn left scheduled
    expect(q.stats).toMatchObject({ depth: 0, maxDepth: 10, turns: 3, handled: 10, refused: 0 });
  });

  it('refuses items beyond the cap and counts them; space frees as turns run', () => {
    const s = manual();
    const out: string[] = [];
    const q = new HandshakeQueue<string>({ handle: (v) => out.push(v), defer: s.defer, batch: 2, cap: 3 });
    expect(['a', 'b', 'c', 'd', 'e'].map((v) => q.push(v))).toEqual([true, true, true, false, false]);
    expect(q.stats.refused).toBe(2);
    s.step();
    expect(q.push('f')).toBe(true);
    expect(q.push('g')).toBe(true);
    expect(q.push('h')).toBe(false);
    while (s.step());
    expect(out).toEqual(['a', 'b', 'c', 'f', 'g']);
    expect(q.stats.refused).toBe(3);
  });

  it('a throwing handler does not stall the queue', () => {
    const s = manual();
    const out: number[] = [];
    const q = new HandshakeQueue<number>({
      handle: (n) => {
        if (n === 1) throw new Error('boom');
        out.push(n);
      },
      defer: s.defer,
      batch: 2,
    });
    for (let i = 0; i < 4; i++) q.push(i);
    while (s.step());
    expect(out).toEqual([0, 2, 3]);
    expect(q.stats.errors).toBe(1);
  });

  it('close drops what waits and refuses new items', () => {
    const s = manual();
    const out: number[] = [];
    const q = new HandshakeQueue<number>({ handle: (n) => out.push(n), defer: s.defer, batch: 1 });
    q.push(1);
    q.push(2);
    s.step();
    q.close();
    expect(q.push(3)).toBe(false);
    while (s.step());
    expect(out).toEqual([1]);
    expect(q.depth).toBe(0);
  });

  it('uses setImmediate by default with the named batch and cap', async () => {
    const out: number[] = [];
    const q = new HandshakeQueue<number>({ handle: (n) => out.push(n) });
    expect(q.batch).toBe(HANDSHAKE_BATCH);
    expect(q.cap).toBe(HANDSHAKE_QUEUE_CAP);
    for (let i = 0; i < HANDSHAKE_BATCH + 1; i++) q.push(i);
    await new Promise((r) => setImmediate(r));
    expect(out.length).toBe(HANDSHAKE_BATCH);
    await new Promise((r) => setImmediate(r));
    expect(out.length).toBe(HANDSHAKE_BATCH + 1);
  });

  it('any interleaving of pushes and turns: FIFO, <= batch per turn, depth <= cap, nothing lost but refusals', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.oneof(fc.constant(-1), fc.integer({ min: 1, max: 30 })), { maxLength: 40 }),
        (batch, cap, ops) => {
          const s = manual();
          const out: number[] = [];
          const q = new HandshakeQueue<number>({ handle: (n) => out.push(n), defer: s.defer, batch, cap });
          const accepted: number[] = [];
          let next = 0;
          let refused = 0;
          for (const op of ops) {
            if (op === -1) {
              const before = out.length;
              s.step();
              expect(out.length - before).toBeLessThanOrEqual(batch);
            } else {
              for (let i = 0; i < op; i++) {
                const v = next++;
                if (q.push(v)) accepted.push(v);
                else refused++;
                expect(q.depth).toBeLessThanOrEqual(cap);
              }
            }
          }
          while (s.step());
          expect(out).toEqual(accepted);
          expect(q.stats.refused).toBe(refused);
        },
      ),
    );
  });
});
