import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { BufferPool, isHandedDown, PoolBudget } from '../buffers/buffer-pool.js';
import { headroomOf, tailroomOf } from '../buffers/packet-room.js';
import { SendSink } from '../buffers/send-sink.js';
import { newArqStats } from './arq-options.js';
import { DatagramWriter } from './datagram-writer.js';
import { CMD_ACK, CMD_PUSH, CMD_PUSHF } from './segment.js';

/** The bottom of a send path (it gives handed-down memory back). */
const sink = new SendSink<never>({ counter: { drop: () => {} } });

type Put = [cmd: number, sn: number, data: Buffer | null, fragOff: number, fragTotal: number];

/** Runs the same puts through a writer with the given room and returns what it output (with the room seen). */
function write(mtu: number, head: number, tail: number, puts: Put[]) {
  const out: Array<{ d: Buffer; head: number; tail: number }> = [];
  const stats = newArqStats();
  const w = new DatagramWriter({
    conv: 9,
    incarnation: 3,
    mtu,
    output: (d) => out.push({ d, head: headroomOf(d), tail: tailroomOf(d) }),
    stats,
    headroom: head,
    tailroom: tail,
  });
  for (const [cmd, sn, data, fragOffset, fragTotal] of puts)
    w.put({ cmd, wnd: 100, ts: 5, sn, una: 1, fragOffset, fragTotal }, data);
  w.finish();
  return { out, stats };
}

const arbPut: fc.Arbitrary<Put> = fc.oneof(
  fc.tuple(fc.constant(CMD_ACK), fc.nat(1000), fc.constant(null), fc.constant(-1), fc.constant(0)),
  fc
    .tuple(fc.nat(1000), fc.uint8Array({ maxLength: 900 }))
    .map(([sn, d]): Put => [CMD_PUSH, sn, Buffer.from(d), -1, 0]),
  fc
    .tuple(fc.nat(1000), fc.uint8Array({ maxLength: 500 }), fc.nat(3000))
    .map(([sn, d, off]): Put => [CMD_PUSHF, sn, Buffer.from(d), off, off + d.length]),
);

describe('DatagramWriter room', () => {
  it('property: datagrams with room are byte-identical to datagrams without, and granted the room', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1024, max: 9000 }),
        fc.integer({ min: 0, max: 128 }),
        fc.integer({ min: 0, max: 64 }),
        fc.array(arbPut, { maxLength: 40 }),
        (mtu, head, tail, puts) => {
          const plain = write(mtu, 0, 0, puts);
          const roomy = write(mtu, head, tail, puts);
          expect(roomy.out.map((o) => o.d.toString('hex'))).toEqual(
            plain.out.map((o) => o.d.toString('hex')),
          );
          expect(roomy.stats.bytesOut).toBe(plain.stats.bytesOut);
          for (const { d, head: h, tail: t } of roomy.out) {
            expect(d.length).toBeLessThanOrEqual(mtu);
            if (head + tail === 0) continue;
            expect(h).toBe(head);
            expect(t).toBeGreaterThanOrEqual(tail);
            expect(d.byteOffset).toBe(head); // its own allocation
            expect(d.byteOffset + d.length + t).toBe(d.buffer.byteLength);
          }
          for (const { head: h, tail: t } of plain.out) expect(h + t).toBe(0);
        },
      ),
    );
  });

  it('copies a small datagram out of a large buffer into its own allocation with the same room', () => {
    const { out } = write(65_475, 81, 31, [[CMD_ACK, 1, null, -1, 0]]);
    expect(out).toHaveLength(1);
    const { d, head, tail } = out[0]!;
    expect(d.length).toBe(24);
    expect([head, tail]).toEqual([81, 31]);
    expect(d.buffer.byteLength).toBe(81 + 24 + 31);
  });

  it('a full datagram keeps the unused bytes of its buffer as tailroom', () => {
    const data = Buffer.alloc(5000, 1);
    const { out } = write(8192, 16, 31, [[CMD_PUSH, 0, data, -1, 0]]);
    expect(out[0]!.d.length).toBe(5024);
    expect(out[0]!.tail).toBe(8192 - 5024 + 31);
  });

  it('refuses a room outside 0..1024', () => {
    for (const [h, t] of [
      [-1, 0],
      [0, 1025],
      [0.5, 0],
    ] as const) {
      let err: unknown;
      try {
        new DatagramWriter({
          conv: 1,
          incarnation: 1,
          mtu: 1400,
          output: () => {},
          stats: newArqStats(),
          headroom: h,
          tailroom: t,
        });
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    }
  });

  it('takes datagram buffers with room from the pool, hands full ones down, and gives small ones back at once', () => {
    const budget = new PoolBudget(1 << 22);
    const pools = new Map<number, BufferPool>();
    const of = (size: number) => {
      const p = pools.get(size) ?? new BufferPool(size, { budget });
      pools.set(size, p);
      return p;
    };
    const out: Buffer[] = [];
    const room = { conv: 9, incarnation: 3, mtu: 20_000, stats: newArqStats(), pools: of };
    const w = new DatagramWriter({ ...room, output: (d) => out.push(d), headroom: 81, tailroom: 31 });
    const push = (sn: number) => ({
      cmd: CMD_PUSH,
      wnd: 10,
      ts: 1,
      sn,
      una: 0,
      fragOffset: -1,
      fragTotal: 0,
    });
    const big = Buffer.alloc(15_000, 7);
    w.put(push(1), big);
    w.finish();
    const pool = pools.get(81 + 20_000 + 31)!;
    expect(pool.owns(out[0]!)).toBe(true);
    expect(isHandedDown(out[0]!)).toBe(true);
    expect(pool.freeCount).toBe(0);
    // A small datagram: copied into its own allocation, the pooled buffer goes straight back.
    w.put({ ...push(1), cmd: CMD_ACK }, null);
    w.finish();
    expect(pool.owns(out[1]!)).toBe(false);
    expect(isHandedDown(out[1]!)).toBe(false);
    expect(pool.freeCount).toBe(1);
    // The bottom of the send path releases the full one; the next datagram reuses a free buffer.
    expect(sink.sent(out[0]!)).toBe(true);
    expect(pool.freeCount).toBe(2);
    w.put(push(2), big);
    w.finish();
    expect(pool.stats).toMatchObject({ takes: 3, fresh: 2, refused: 0 });
    // Without room nothing is pooled (nobody below could give it back).
    const plain: Buffer[] = [];
    const w0 = new DatagramWriter({ ...room, output: (d) => plain.push(d) });
    w0.put(push(1), big);
    w0.finish();
    expect(pools.has(20_000)).toBe(false);
    expect(isHandedDown(plain[0]!)).toBe(false);
  });

  it('pools the datagrams of a direct path (1,392-byte MTU) too, handed down whole', () => {
    const pool = new BufferPool(80 + 1_392 + 32, { budget: new PoolBudget(1 << 20) });
    const out: Buffer[] = [];
    const w = new DatagramWriter({
      conv: 9,
      incarnation: 3,
      mtu: 1_392,
      stats: newArqStats(),
      pools: () => pool,
      output: (d) => out.push(d),
      headroom: 80,
      tailroom: 32,
    });
    const seg = { cmd: CMD_PUSH, wnd: 10, ts: 1, sn: 1, una: 0, fragOffset: -1, fragTotal: 0 };
    w.put(seg, Buffer.alloc(1_000, 5));
    w.finish();
    expect(pool.owns(out[0]!)).toBe(true);
    expect(isHandedDown(out[0]!)).toBe(true);
    expect(sink.sent(out[0]!)).toBe(true);
    w.put({ ...seg, sn: 2 }, Buffer.alloc(1_000, 6));
    w.finish();
    expect(pool.stats).toMatchObject({ takes: 2, fresh: 1, refused: 0 });
  });
});
