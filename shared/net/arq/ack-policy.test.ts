import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FaultyLinkOptions, faultyPath, pumpInto } from '../../../test/helpers/faulty-path.js';
import { FakeClock } from '../../clock.js';
import type { ArqOptions } from './arq-options.js';
import { ArqSession } from './arq-session.js';
import {
  ACK_DELAY_BYTES,
  CMD_ACK,
  CMD_PUSH,
  readAckDelayMs,
  readHeader,
  SEG_HEADER,
  type SegmentHeader,
  writeAckDelay,
  writeHeader,
} from './segment.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const MTU = 1392;
const MSS = MTU - SEG_HEADER;
const DIRECT = { ackEvery: 4, ackDelayMs: 1 };

function setup(
  path: Omit<FaultyLinkOptions, 'clock'>,
  arq: Partial<ArqOptions> = {},
): { clock: FakeClock; a: ArqSession; b: ArqSession; p: ReturnType<typeof faultyPath> } {
  const clock = new FakeClock(0);
  const p = faultyPath(clock, path);
  const a = new ArqSession({ conv: 9, mtu: MTU, clock, output: p.ab.send, ...arq });
  const b = new ArqSession({ conv: 9, mtu: MTU, clock, output: p.ba.send, ...arq });
  p.ab.deliver = (d) => b.input(d);
  p.ba.deliver = (d) => a.input(d);
  return { clock, a, b, p };
}

function received(s: ArqSession): { bytes: () => Buffer; length: () => number } {
  const got: Buffer[] = [];
  let n = 0;
  s.on('data', (d: Buffer) => {
    got.push(Buffer.from(d));
    n += d.length;
  });
  return { bytes: () => Buffer.concat(got), length: () => n };
}

function runUntil(clock: FakeClock, done: () => boolean, limitMs: number, step = 1): void {
  const end = clock.now() + limitMs;
  while (!done() && clock.now() < end) clock.advance(step);
}

/** One transfer of `bytes` from a to b; the datagrams each way and how long it took. */
function transfer(
  path: Omit<FaultyLinkOptions, 'clock'>,
  arq: Partial<ArqOptions>,
  bytes: number,
): { dataDatagrams: number; ackDatagrams: number; ms: number; a: ArqSession; same: boolean } {
  const { clock, a, b, p } = setup(path, arq);
  const data = randomBytes(bytes);
  const rx = received(b);
  pumpInto(a, data, 64 * 1024);
  runUntil(clock, () => rx.length() >= data.length && a.bufferedBytes === 0, 120_000);
  return {
    dataDatagrams: p.ab.counters.sent,
    ackDatagrams: p.ba.counters.sent,
    ms: clock.now(),
    a,
    same: sha(rx.bytes()) === sha(data),
  };
}

describe('ARQ acknowledgement policy', () => {
  it('acknowledges every 4th segment on the direct policy: a quarter of the ACK datagrams, the same bytes', () => {
    const every = transfer({ latencyMs: 1 }, { ackEvery: 1, ackDelayMs: 10 }, 2_000_000);
    const fourth = transfer({ latencyMs: 1 }, DIRECT, 2_000_000);
    expect(every.same && fourth.same).toBe(true);
    expect(every.ackDatagrams).toBeGreaterThan(every.dataDatagrams * 0.9);
    expect(fourth.ackDatagrams).toBeLessThan(fourth.dataDatagrams * 0.3);
    // Not slower for it: the sender is never left waiting on the delay.
    expect(fourth.ms).toBeLessThanOrEqual(every.ms * 1.1);
  });

  it('leaves the time an ACK was held out of the RTT (property: srtt is the path round trip exactly)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 2, max: 64 }),
        fc.integer({ min: 10, max: 200 }),
        (latencyMs, ackDelayMs, ackEvery, segments) => {
          // Without congestion control the window never fills, so every ACK waits for its count or its delay.
          const arq = { ackEvery, ackDelayMs, congestionControl: false };
          const t = transfer({ latencyMs }, arq, segments * MSS);
          expect(t.same).toBe(true);
          expect(t.a.srttMs).toBe(2 * latencyMs);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('applies a new policy to the ACKs already pending, at once (a path switch)', () => {
    const { clock, a, b, p } = setup({ latencyMs: 5 }, { ackEvery: 8, ackDelayMs: 50 });
    const rx = received(b);
    a.write(randomBytes(3 * MSS));
    clock.advance(6);
    expect(rx.length()).toBe(3 * MSS);
    expect(p.ba.counters.sent).toBe(0); // 3 of 8 pending, 44 ms of delay left
    b.setAckPolicy({ ackEvery: 1, ackDelayMs: 10 });
    expect(b.ackPolicy).toEqual({ ackEvery: 1, ackDelayMs: 10 });
    expect(p.ba.counters.sent).toBe(1);
    clock.advance(6);
    expect(a.bufferedBytes).toBe(0);
  });

  it('does not hold back a window-limited sender: it asks for the ACKs behind its data', () => {
    const arq = { ...DIRECT, ackDelayMs: 200, sendWindow: 2 };
    const t = transfer({ latencyMs: 1 }, arq, 100 * MSS);
    expect(t.same).toBe(true);
    // 50 rounds of two segments at 2 ms each, not 50 waits of the 200 ms delay.
    expect(t.ms).toBeLessThan(400);
    expect(t.a.stats.ackAsks).toBeGreaterThan(0);
  });

  it("lets a reply carry a short request's ACK: one datagram back per exchange, not two", () => {
    const { clock, a, b, p } = setup({ latencyMs: 1 }, DIRECT);
    b.on('data', () => clock.setTimer(0.25, () => b.write(Buffer.from('a small reply'))));
    let replies = 0;
    a.on('data', () => replies++);
    for (let i = 1; i <= 20; i++) {
      a.write(Buffer.from('a small request'));
      runUntil(clock, () => replies === i && a.bufferedBytes === 0, 100, 0.05);
    }
    expect(replies).toBe(20);
    expect(a.bufferedBytes).toBe(0);
    expect(p.ba.counters.sent).toBe(20);
  });

  it("sends a short segment's ACK after the delay when nothing carries it", () => {
    const { clock, a, p } = setup({ latencyMs: 5 }, { ackEvery: 4, ackDelayMs: 20 });
    a.write(Buffer.from('a small request'));
    runUntil(clock, () => a.bufferedBytes === 0, 1_000);
    expect(clock.now()).toBeGreaterThanOrEqual(30);
    expect(clock.now()).toBeLessThanOrEqual(32);
    expect(p.ba.counters.sent).toBe(1);
    expect(a.srttMs).toBeLessThanOrEqual(11); // the hold is not path delay
  });

  it('acknowledges at once around a gap and survives loss, reordering and duplication on the direct policy', () => {
    const path = { seed: 11, loss: 0.05, reorder: 0.1, duplicate: 0.05, latencyMs: 2, jitterMs: 1 };
    const t = transfer(path, DIRECT, 1_500_000);
    expect(t.same).toBe(true);
    expect(t.a.stats.retransmitsFast).toBeGreaterThan(0);
  });

  it('accepts ACKs without a delay (an older peer) and ignores bytes after the delay', () => {
    const clock = new FakeClock(0);
    const sent: Buffer[] = [];
    const a = new ArqSession({ conv: 3, mtu: MTU, clock, output: (d) => sent.push(Buffer.from(d)) });
    a.write(Buffer.from('x'.repeat(2 * MSS)));
    expect(sent).toHaveLength(2);
    const h: SegmentHeader = { conv: 0, cmd: 0, inc: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
    const acks = sent.map((d) => {
      readHeader(d, 0, h);
      expect(h.cmd).toBe(CMD_PUSH);
      return { sn: h.sn, ts: h.ts };
    });
    clock.advance(8);
    // An ACK with no data (older peer), then one with 4 ms of delay and 3 bytes this version does not know.
    const old = Buffer.alloc(SEG_HEADER);
    writeHeader(old, 0, {
      conv: 3,
      cmd: CMD_ACK,
      inc: 5,
      wnd: 100,
      ts: acks[0]!.ts,
      sn: acks[0]!.sn,
      una: 0,
      len: 0,
    });
    a.input(old);
    expect(a.srttMs).toBe(8);
    const extra = Buffer.alloc(SEG_HEADER + ACK_DELAY_BYTES + 3, 0xee);
    writeHeader(extra, 0, {
      conv: 3,
      cmd: CMD_ACK,
      inc: 5,
      wnd: 100,
      ts: acks[1]!.ts,
      sn: acks[1]!.sn,
      una: 0,
      len: 7,
    });
    writeAckDelay(extra.subarray(SEG_HEADER), 4);
    a.input(extra);
    expect(a.stats.garbage).toEqual({ short: 0, conv: 0, cmd: 0, length: 0, fragment: 0 });
    expect(a.bufferedBytes).toBe(0);
    expect(a.srttMs).toBe((7 * 8 + 4) / 8);
  });

  it('encodes the ACK delay as u32 LE microseconds, clamped (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: -10, max: 5e6, noNaN: true }), (ms) => {
        const b = Buffer.alloc(SEG_HEADER + ACK_DELAY_BYTES);
        writeAckDelay(b.subarray(SEG_HEADER), ms);
        const us = b.readUInt32LE(SEG_HEADER);
        expect(us).toBe(Math.min(0xffffffff, Math.max(0, Math.round(ms * 1000))));
        expect(readAckDelayMs(b, 0, ACK_DELAY_BYTES)).toBe(us / 1000);
        expect(readAckDelayMs(b, 0, 0)).toBe(0);
      }),
    );
  });
});
