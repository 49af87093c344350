import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { isTunnelError, TunnelError } from '../../errors.js';
import { encodeHeader, FRAME_HEADER, type FrameHeader, TYPE_DATA } from './frame.js';
import { FrameParser } from './frame-parser.js';
import { BASE_WINDOW } from './mux-options.js';
import { MuxSession } from './mux-session.js';
import type { MuxStream } from './mux-stream.js';

const frameArb = fc.record({
  type: fc.integer({ min: 0, max: 3 }),
  flags: fc.integer({ min: 0, max: 15 }),
  streamId: fc.nat({ max: 0xffffffff }),
  length: fc.nat({ max: 0xffffffff }),
  payload: fc.uint8Array({ maxLength: 300 }),
});
type Frame = { type: number; flags: number; streamId: number; length: number; payload: Uint8Array };

function encode(frames: Frame[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of frames) {
    const len = f.type === TYPE_DATA ? f.payload.length : f.length;
    parts.push(encodeHeader(f.type, f.flags, f.streamId, len));
    if (f.type === TYPE_DATA) parts.push(Buffer.from(f.payload));
  }
  return Buffer.concat(parts);
}

/** Parses `chunks` and returns a log: one entry per header, with the frame's whole payload joined. */
function parseLog(chunks: Buffer[], maxData = 1 << 20): string[] {
  const log: string[] = [];
  let pay: Buffer[] = [];
  const reader = { onData: (c: Buffer) => pay.push(Buffer.from(c)) };
  const p = new FrameParser(
    {
      header: (h: FrameHeader) => {
        log.push(`${h.type}/${h.flags}/${h.streamId}/${h.length}`);
        return reader;
      },
      payloadEnd: () => {
        log.push(`data:${Buffer.concat(pay).toString('hex')}`);
        pay = [];
      },
    },
    maxData,
  );
  try {
    for (const c of chunks) p.push(c);
  } catch (err) {
    log.push(`error:${(err as TunnelError).code}`);
  }
  return log;
}

function split(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const pt of points) {
    out.push(buf.subarray(prev, pt));
    prev = pt;
  }
  out.push(buf.subarray(prev));
  return out;
}

describe('FrameParser', () => {
  it('gives identical output however the same byte stream is re-chunked', () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 60 }),
        (frames, cuts) => {
          const bytes = encode(frames);
          const whole = parseLog([bytes]);
          expect(whole.filter((l) => !l.startsWith('data:') && !l.startsWith('error:'))).toHaveLength(
            frames.length,
          );
          expect(parseLog(split(bytes, cuts))).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives identical output when split at every single byte offset', () => {
    const frames: Frame[] = [
      { type: 1, flags: 1, streamId: 1, length: 0, payload: new Uint8Array() },
      { type: 0, flags: 0, streamId: 1, length: 0, payload: Buffer.from('hello, multiplexed world') },
      { type: 2, flags: 1, streamId: 0, length: 77, payload: new Uint8Array() },
      { type: 0, flags: 4, streamId: 1, length: 0, payload: new Uint8Array() },
      { type: 0, flags: 0, streamId: 3, length: 0, payload: Buffer.alloc(40, 7) },
      { type: 3, flags: 0, streamId: 0, length: 0, payload: new Uint8Array() },
    ];
    const bytes = encode(frames);
    const whole = parseLog([bytes]);
    for (let k = 0; k <= bytes.length; k++) {
      expect(parseLog([bytes.subarray(0, k), bytes.subarray(k)])).toEqual(whole);
    }
    // One byte at a time, too.
    expect(parseLog([...bytes].map((b) => Buffer.from([b])))).toEqual(whole);
  });

  it('rejects a bad version, a bad type and an oversized data length before reading any payload', () => {
    const bad = encodeHeader(0, 0, 1, 10);
    bad[0] = 1;
    expect(parseLog([bad])).toEqual(['error:WIRE_BAD_TYPE']);
    expect(parseLog([encodeHeader(9, 0, 1, 0)])).toEqual(['error:WIRE_BAD_TYPE']);
    expect(parseLog([encodeHeader(TYPE_DATA, 0, 1, 2_000_000)], 1_000_000)).toEqual(['error:WIRE_TOO_LARGE']);
  });
});

describe('MuxSession fed garbage', () => {
  it('only ever closes with a TunnelError, never throws, and buffers no more than the windows allow', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            frameArb,
            frameArb.map((f) => ({ ...f, type: TYPE_DATA, flags: f.flags & 1 })),
          ),
          {
            maxLength: 30,
          },
        ),
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (frames, noise, cuts) => {
          const clock = new FakeClock(0);
          const out: Buffer[] = [];
          const m = new MuxSession({
            role: 'server',
            clock,
            keepAliveMs: 0,
            maxStreams: 8,
            write: (b) => {
              out.push(b);
              return true;
            },
          });
          const streams: MuxStream[] = [];
          m.on('stream', (s: MuxStream) => {
            s.on('error', () => {});
            streams.push(s);
          });
          let closeErr: unknown = 'open';
          m.on('close', (e: unknown) => {
            closeErr = e;
          });
          const bytes = Buffer.concat([encode(frames), Buffer.from(noise)]);
          for (const c of split(bytes, cuts)) m.input(c);
          if (closeErr !== 'open' && closeErr !== undefined) expect(closeErr).toBeInstanceOf(TunnelError);
          expect(m.streamCount).toBeLessThanOrEqual(8);
          for (const s of streams) expect(s.queuedBytes + s.readableLength).toBeLessThanOrEqual(BASE_WINDOW);
          m.close();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('closes with WIRE_TOO_LARGE on a data length over the largest window, without reading it', () => {
    const clock = new FakeClock(0);
    const m = new MuxSession({ role: 'server', clock, keepAliveMs: 0, write: () => true });
    let err: unknown;
    m.on('close', (e: unknown) => {
      err = e;
    });
    m.input(encodeHeader(TYPE_DATA, 1, 1, 0xffffffff).subarray(0, FRAME_HEADER));
    expect(isTunnelError(err, 'WIRE_TOO_LARGE')).toBe(true);
  });
});
