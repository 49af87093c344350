/**
 * ARQ sessions with pooled segment and datagram buffers over the faulty path (loss, reordering,
 * duplication, blackouts, an MTU that shrinks mid-transfer). The test pools poison every buffer given back,
 * so a segment given back while still in flight (and then resent), or a datagram given back before the
 * "socket" copied it, would deliver poison instead of the data. The path's "socket" copies each datagram
 * and releases it, as the DERP client does after its write callback.
 */
import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { faultyPath, pumpInto } from '../../../test/helpers/faulty-path.js';
import { FakeClock } from '../../clock.js';
import { BufferPool, PoolBudget } from '../buffers/buffer-pool.js';
import { SendSink } from '../buffers/send-sink.js';
import { ArqSession } from './arq-session.js';

/** The bottom of a send path (it gives handed-down memory back). */
const sink = new SendSink<never>({ counter: { drop: () => {} } });

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const POISON = 0xdb;

/** Pools by size on one budget, poisoning what is given back. */
function testPools(capBytes: number) {
  const budget = new PoolBudget(capBytes);
  const pools = new Map<number, BufferPool>();
  const of = (size: number): BufferPool => {
    let p = pools.get(size);
    if (!p) {
      p = new BufferPool(size, { budget, poison: POISON });
      pools.set(size, p);
    }
    return p;
  };
  return { of, pools, budget };
}

describe('ArqSession with pooled buffers over a faulty path', () => {
  it('property: random data arrives byte for byte while pool buffers are reused, none given back early', () => {
    fc.assert(
      fc.property(
        fc.record({
          seed: fc.nat(1_000_000),
          mtu: fc.integer({ min: 9_000, max: 65_000 }),
          shrinkTo: fc.option(fc.integer({ min: 1_200, max: 8_000 }), { nil: undefined }),
          loss: fc.double({ min: 0, max: 0.12, noNaN: true }),
          reorder: fc.double({ min: 0, max: 0.2, noNaN: true }),
          duplicate: fc.double({ min: 0, max: 0.1, noNaN: true }),
          blackout: fc.boolean(),
          bytes: fc.integer({ min: 100_000, max: 700_000 }),
          chunk: fc.integer({ min: 500, max: 70_000 }),
          capBuffers: fc.integer({ min: 0, max: 40 }),
        }),
        (o) => {
          const clock = new FakeClock(0);
          const p = faultyPath(clock, {
            seed: o.seed,
            loss: o.loss,
            reorder: o.reorder,
            duplicate: o.duplicate,
            latencyMs: 4,
            jitterMs: 2,
          });
          if (o.blackout) {
            p.ab.addBlackout(30, 230);
            p.ba.addBlackout(60, 160);
          }
          const tp = testPools(o.capBuffers * (o.mtu + 200));
          // The bottom of the send path: the "socket" takes a copy, then the memory is released.
          const socket = (send: (d: Buffer) => void) => (d: Buffer) => {
            const copy = Buffer.from(d);
            sink.sent(d);
            send(copy);
          };
          const opts = { conv: 11, mtu: o.mtu, clock, headroom: 81, tailroom: 31, pools: tp.of };
          const a = new ArqSession({ ...opts, output: socket(p.ab.send) });
          const b = new ArqSession({ ...opts, output: socket(p.ba.send) });
          p.ab.deliver = (d) => b.input(d);
          p.ba.deliver = (d) => a.input(d);
          const got: Buffer[] = [];
          let n = 0;
          b.on('data', (d: Buffer) => {
            got.push(Buffer.from(d));
            n += d.length;
          });
          const data = randomBytes(o.bytes);
          pumpInto(a, data, o.chunk);
          let shrunk = false;
          const end = 300_000;
          while (n < data.length && clock.now() < end) {
            clock.advance(2);
            if (o.shrinkTo !== undefined && !shrunk && n > data.length / 3) {
              shrunk = true;
              a.setMtu(o.shrinkTo); // segments in flight are now resent as fragments of their pooled buffers
            }
          }
          expect(n).toBe(data.length);
          expect(sha(Buffer.concat(got))).toBe(sha(data));
          clock.advance(5_000);
          expect(a.bufferedBytes).toBe(0);
          const all = [...tp.pools.values()];
          const sum = (f: (s: BufferPool['stats']) => number) => all.reduce((t, q) => t + f(q.stats), 0);
          // Reused: more takes than fresh allocations (unless the budget keeps nothing at all).
          if (o.capBuffers > 2) expect(sum((s) => s.takes)).toBeGreaterThan(sum((s) => s.fresh));
          // Everything taken came back exactly once: acked segments, released datagrams.
          expect(sum((s) => s.kept + s.discarded)).toBe(sum((s) => s.takes));
          expect(sum((s) => s.refused)).toBe(0);
          expect(tp.budget.freeBytes).toBeLessThanOrEqual(tp.budget.capBytes);
          a.close();
          b.close();
        },
      ),
      { numRuns: 25 },
    );
  });

  it('close() gives back the segments still unacknowledged', () => {
    const clock = new FakeClock(0);
    const tp = testPools(1 << 24);
    const sent: Buffer[] = [];
    const a = new ArqSession({
      conv: 3,
      mtu: 30_000,
      clock,
      pools: tp.of,
      output: (d) => sent.push(Buffer.from(d)), // never acknowledged
    });
    a.write(randomBytes(100_000));
    a.flush(true);
    const taken = () => [...tp.pools.values()].reduce((t, q) => t + q.stats.takes, 0);
    const back = () => [...tp.pools.values()].reduce((t, q) => t + q.stats.kept + q.stats.discarded, 0);
    expect(taken()).toBeGreaterThan(0);
    expect(back()).toBe(0); // all in flight
    clock.advance(50); // retransmissions copy from the same buffers
    a.close();
    expect(back()).toBe(taken());
    expect(sent.length).toBeGreaterThan(0);
  });
});
