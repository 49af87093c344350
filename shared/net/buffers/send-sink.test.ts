/**
 * The sink at the bottom of a send path: drops counted by reason, pooled memory given back once (on a
 * drop, a synchronous send, or the n-th in-order completion), one callback per sink whatever the traffic,
 * and nothing waiting given back after a failed write. The real sockets' use of it is tested in
 * relay/data/derp/pool-release.test.ts, udp-transport.test.ts and gso-socket.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { BufferPool, handDown, isHandedDown, PoolBudget } from './buffer-pool.js';
import { SendSink } from './send-sink.js';

type Reason = 'busy' | 'gone';

function setup() {
  const pool = new BufferPool(64, { budget: new PoolBudget(1 << 20), poison: 0xee });
  const counts: Record<Reason, number> = { busy: 0, gone: 0 };
  let bytes = 0;
  const written: (Error | null | undefined)[] = [];
  const sink = new SendSink<Reason>({
    counter: {
      drop: (reason, n) => {
        counts[reason]++;
        bytes += n;
      },
    },
    onWritten: (err) => written.push(err),
  });
  const handed = (fill: number): Buffer => {
    const b = pool.take().fill(fill);
    handDown(pool, b);
    return b;
  };
  return { pool, counts, sink, handed, written, bytes: () => bytes };
}

describe('SendSink', () => {
  it('counts a drop by reason and gives its memory back once', () => {
    const t = setup();
    const b = t.handed(1);
    expect(t.sink.drop('busy', b, 10)).toBe(false);
    expect(t.counts).toEqual({ busy: 1, gone: 0 });
    expect(t.bytes()).toBe(10);
    expect(t.pool.freeCount).toBe(1);
    expect(t.sink.sent(b)).toBe(false); // given back already
    expect(t.sink.refuse(Buffer.alloc(8))).toBe(false); // not pooled: nothing to give back
    expect(t.pool.stats.refused).toBe(0);
  });

  it('hands out one of two callbacks, and gives pooled views back in write order', () => {
    const t = setup();
    const views = [t.handed(1), t.handed(2), t.handed(3)];
    const completions = views.map((v) => t.sink.completion(v));
    const plain = t.sink.completion(Buffer.alloc(4));
    expect(new Set(completions).size).toBe(1);
    expect(plain).not.toBe(completions[0]);
    expect(t.sink.writing).toBe(3);
    completions[0]!(null);
    expect(isHandedDown(views[0]!)).toBe(false);
    expect(isHandedDown(views[1]!)).toBe(true);
    expect(views[0]![0]).toBe(0xee); // poisoned: back in the pool
    expect(views[1]![0]).toBe(2);
    plain(null);
    completions[1]!(null);
    completions[2]!(null);
    expect(t.pool.freeCount).toBe(3);
    expect(t.written).toEqual([null, null, null, null]);
  });

  it('after a failed write gives back nothing that was waiting, then carries on', () => {
    const t = setup();
    const waiting = [t.handed(1), t.handed(2), t.handed(3)];
    const done = waiting.map((v) => t.sink.completion(v));
    const failure = new Error('socket closed');
    done[2]!(failure); // reported before the two writes ahead of it
    done[0]!(null);
    done[1]!(null);
    for (const v of waiting) expect(v[0]).not.toBe(0xee);
    expect(t.pool.freeCount).toBe(0);
    expect(t.sink.writing).toBe(0);
    const next = t.handed(4);
    t.sink.completion(next)(null);
    expect(t.pool.freeCount).toBe(1);
    expect(t.written).toEqual([failure, null, null, null]);
  });
});
