import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { ArqSession } from './arq-session.js';
import { mergeInterval, Reassembly } from './reassembly.js';
import {
  CMD_PUSH,
  CMD_PUSHF,
  MAX_SEGMENT_DATA,
  peekConv,
  readHeader,
  SEG_HEADER,
  type SegmentHeader,
  writeHeader,
} from './segment.js';

const header = fc.record({
  conv: fc.nat({ max: 0xffffffff }),
  cmd: fc.integer({ min: 0, max: 255 }),
  inc: fc.integer({ min: 0, max: 255 }),
  wnd: fc.nat({ max: 0xffff }),
  ts: fc.nat({ max: 0xffffffff }),
  sn: fc.nat({ max: 0xffffffff }),
  una: fc.nat({ max: 0xffffffff }),
  len: fc.nat({ max: 0xffffffff }),
});

describe('segment codec', () => {
  it('round-trips every header field (little-endian layout)', () => {
    fc.assert(
      fc.property(header, (h) => {
        const b = Buffer.alloc(SEG_HEADER);
        writeHeader(b, 0, h);
        const out: SegmentHeader = { conv: 0, cmd: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
        readHeader(b, 0, out);
        expect(out).toEqual(h);
        expect(b.readUInt32LE(12)).toBe(h.sn);
        expect(peekConv(b)).toBe(h.conv);
        expect(peekConv(b.subarray(0, SEG_HEADER - 1))).toBeUndefined();
      }),
    );
  });
});

describe('input() with garbage', () => {
  const cfg = { recvBufferBytes: 256 * 1024, maxReassembly: 8 };

  it('never throws on random bytes and holds no data', () => {
    const clock = new FakeClock(0);
    const s = new ArqSession({ conv: 5, mtu: 1392, clock, output: () => {}, ...cfg });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (bytes) => {
        s.input(Buffer.from(bytes));
      }),
    );
    const g = s.stats.garbage;
    expect(g.short + g.conv + g.cmd + g.length).toBeGreaterThan(0);
    expect(s.recvHeldBytes).toBe(0);
    expect(s.closed).toBe(false);
  });

  it('stays within its receive caps under well-formed but hostile segments', () => {
    const seg = fc.record({
      cmd: fc.integer({ min: 79, max: 87 }),
      sn: fc.oneof(fc.nat({ max: 5000 }), fc.nat({ max: 0xffffffff })),
      una: fc.nat({ max: 0xffffffff }),
      wnd: fc.nat({ max: 0xffff }),
      ts: fc.nat({ max: 0xffffffff }),
      data: fc.uint8Array({ maxLength: 1500 }),
      lie: fc.integer({ min: -3, max: 3 }),
      fragOff: fc.nat({ max: 70_000 }),
      fragTotal: fc.nat({ max: 70_000 }),
    });
    fc.assert(
      fc.property(fc.array(fc.array(seg, { minLength: 1, maxLength: 4 }), { maxLength: 40 }), (dgrams) => {
        const clock = new FakeClock(0);
        let sent = 0;
        const s = new ArqSession({ conv: 5, mtu: 1392, clock, output: () => sent++, ...cfg });
        for (const segs of dgrams) {
          const parts: Buffer[] = [];
          for (const x of segs) {
            let data = Buffer.from(x.data);
            if (x.cmd === CMD_PUSHF && data.length >= 4) {
              data.writeUInt16LE(x.fragOff & 0xffff, 0);
              data.writeUInt16LE(x.fragTotal & 0xffff, 2);
            }
            if (x.cmd === CMD_PUSH && data.length === 0) data = Buffer.from([1]);
            const h = Buffer.alloc(SEG_HEADER);
            writeHeader(h, 0, { conv: 5, ...x, len: Math.max(0, data.length + x.lie) });
            parts.push(h, data);
          }
          s.input(Buffer.concat(parts));
          clock.advance(3);
        }
        expect(s.recvHeldBytes).toBeLessThanOrEqual(
          cfg.recvBufferBytes + cfg.maxReassembly * MAX_SEGMENT_DATA,
        );
        expect(s.closed).toBe(false);
        s.close();
      }),
      { numRuns: 200 },
    );
  });
});

describe('fragment reassembly', () => {
  it('merges intervals like a naive byte set', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: 200 }), fc.nat({ max: 40 })), { maxLength: 30 }),
        (ranges) => {
          let have: number[] = [];
          const naive = new Set<number>();
          for (const [s, len] of ranges) {
            have = mergeInterval(have, s, s + len + 1);
            for (let i = s; i < s + len + 1; i++) naive.add(i);
          }
          let count = 0;
          for (let i = 0; i < have.length; i += 2) {
            expect(have[i]!).toBeLessThan(have[i + 1]!);
            if (i > 0) expect(have[i]!).toBeGreaterThan(have[i - 1]!);
            count += have[i + 1]! - have[i]!;
          }
          expect(count).toBe(naive.size);
        },
      ),
    );
  });

  it('rebuilds a segment from pieces cut at several sizes, duplicated and shuffled', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 5000 }),
        fc.array(fc.integer({ min: 1, max: 900 }), { minLength: 1, maxLength: 3 }),
        fc.integer(),
        (seg, sizes, seed) => {
          const data = Buffer.from(seg);
          const pieces: Buffer[] = [];
          for (const size of sizes) {
            for (let off = 0; off < data.length; off += size) {
              const piece = data.subarray(off, Math.min(data.length, off + size));
              const b = Buffer.alloc(4 + piece.length);
              b.writeUInt16LE(off, 0);
              b.writeUInt16LE(data.length, 2);
              piece.copy(b, 4);
              pieces.push(b);
            }
          }
          let x = seed >>> 0;
          for (let i = pieces.length - 1; i > 0; i--) {
            x = (Math.imul(x, 1103515245) + 12345) >>> 0;
            const j = x % (i + 1);
            [pieces[i], pieces[j]] = [pieces[j]!, pieces[i]!];
          }
          const r = new Reassembly(4);
          let done: Buffer | undefined;
          for (const p of pieces) {
            const res = r.add(77, p);
            expect(res.kind).not.toBe('malformed');
            if (res.kind === 'complete') {
              done = res.data;
              break;
            }
          }
          expect(done?.equals(data)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
