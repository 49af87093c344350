import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pumpInto } from '../../../test/helpers/faulty-path.js';
import { FakeClock } from '../../clock.js';
import { ArqSession } from './arq-session.js';
import { ReceiveRun } from './receive-run.js';
import { CMD_ACK, readHeader, SEG_HEADER, type SegmentHeader } from './segment.js';

const MTU = 1392;
const MSS = MTU - SEG_HEADER;
const DIRECT = { ackEvery: 8, ackDelayMs: 1 };
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The ACK segments in a datagram. */
function ackSegments(d: Buffer): number {
  const h: SegmentHeader = { conv: 0, cmd: 0, inc: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
  let n = 0;
  for (let off = 0; off + SEG_HEADER <= d.length; off += SEG_HEADER + h.len) {
    readHeader(d, off, h);
    if (h.cmd === CMD_ACK) n++;
  }
  return n;
}

/** Two sessions whose datagrams are queued, and handed over in runs (GRO reads) by the test. */
function pair(run: ReceiveRun, extra: { congestionControl?: boolean } = {}) {
  const clock = new FakeClock(0);
  const ab: Buffer[] = [];
  const ba: Buffer[] = [];
  const a = new ArqSession({
    conv: 7,
    mtu: MTU,
    clock,
    output: (d) => ab.push(Buffer.from(d)),
    run,
    ...DIRECT,
    ...extra,
  });
  const b = new ArqSession({
    conv: 7,
    mtu: MTU,
    clock,
    output: (d) => ba.push(Buffer.from(d)),
    run,
    ...DIRECT,
    ...extra,
  });
  return { clock, a, b, ab, ba };
}

/** Hands `to` the queued datagrams as runs of up to `runLength`, dropping those `drop` picks. */
function deliver(o: {
  run: ReceiveRun;
  from: Buffer[];
  to: ArqSession;
  runLength: number;
  drop?: () => boolean;
}) {
  const queued = o.from.splice(0);
  for (let i = 0; i < queued.length; i += o.runLength) {
    o.run.within(() => {
      for (const d of queued.slice(i, i + o.runLength)) if (!o.drop?.()) o.to.input(d);
    });
  }
}

describe('receive runs', () => {
  it('flushes each deferred session once, at the end of the outermost run, and none outside a run', () => {
    const run = new ReceiveRun();
    const flushed: string[] = [];
    const a = { flushRun: () => flushed.push('a') };
    const b = { flushRun: () => flushed.push('b') };
    expect(run.defer(a)).toBe(false);
    run.within(() => {
      expect(run.defer(a)).toBe(true);
      run.within(() => expect(run.defer(b)).toBe(true));
      expect(flushed).toEqual([]);
      expect(run.defer(a)).toBe(true);
    });
    expect(flushed).toEqual(['a', 'b']);
    expect(run.stats).toEqual({ runs: 1, flushes: 2 });
  });

  it('runs every flush when one throws, then throws the first error', () => {
    const run = new ReceiveRun();
    let ran = false;
    expect(() =>
      run.within(() => {
        run.defer({
          flushRun: () => {
            throw new Error('first');
          },
        });
        run.defer({ flushRun: () => (ran = true) });
      }),
    ).toThrow('first');
    expect(ran).toBe(true);
  });

  it('acknowledges a run of 44 data datagrams in one ACK datagram, one ACK segment (one per 8 outside a run)', () => {
    for (const inRun of [true, false]) {
      const run = new ReceiveRun();
      const { a, b, ab, ba } = pair(run, { congestionControl: false });
      a.write(randomBytes(44 * MSS));
      expect(ab.length).toBe(44);
      deliver({ run, from: ab, to: b, runLength: inRun ? 44 : 1 });
      // In order, una covers them all: one ACK segment (the newest, for the RTT) per datagram.
      expect(ba.map(ackSegments)).toEqual(inRun ? [1] : [1, 1, 1, 1, 1]);
      expect(ba.length).toBe(inRun ? 1 : 5);
    }
  });

  it('acknowledges each segment past a hole, and one ACK datagram for a run is enough to resend the hole', () => {
    const run = new ReceiveRun();
    const { a, b, ab, ba } = pair(run, { congestionControl: false });
    a.write(randomBytes(44 * MSS));
    let i = 0;
    deliver({ run, from: ab, to: b, runLength: 44, drop: () => i++ === 10 });
    // 10 in order (one segment), 33 past the hole (one each), in one datagram.
    expect(ba.map(ackSegments)).toEqual([34]);
    deliver({ run, from: ba, to: a, runLength: 44 });
    expect(ab.length).toBe(1); // the hole, resent at once: 33 acknowledged segments above it
    deliver({ run, from: ab, to: b, runLength: 44 });
    expect(ba.length).toBe(1); // a filled hole is acknowledged at once
    deliver({ run, from: ba, to: a, runLength: 44 });
    expect(a.bufferedBytes).toBe(0);
  });

  it('moves the same bytes in runs over a lossy path, as fast as without runs', () => {
    const times: number[] = [];
    for (const runLength of [1, 44]) {
      const run = new ReceiveRun();
      const { clock, a, b, ab, ba } = pair(run);
      const data = randomBytes(3_000_000);
      const got: Buffer[] = [];
      let n = 0;
      b.on('data', (d: Buffer) => {
        got.push(Buffer.from(d));
        n += d.length;
      });
      pumpInto(a, data, 64 * 1024);
      let seed = 1;
      const drop = () => {
        seed = (seed * 48271) % 2147483647;
        return seed % 100 < 2; // 2 % loss, the same draws for both
      };
      while ((n < data.length || a.bufferedBytes > 0) && clock.now() < 120_000) {
        deliver({ run, from: ab, to: b, runLength, drop });
        deliver({ run, from: ba, to: a, runLength, drop });
        clock.advance(1);
      }
      expect(sha(Buffer.concat(got))).toBe(sha(data));
      if (runLength > 1) expect(run.stats.flushes).toBeGreaterThan(0);
      times.push(clock.now());
    }
    expect(times[1]).toBeLessThanOrEqual(times[0]! * 1.1);
  });
});
