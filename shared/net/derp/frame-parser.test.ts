import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { FrameParser } from './frame-parser.js';
import {
  allocFrame,
  encodeRecvPacket,
  encodeSendPacket,
  FRAME_HEADER_LEN,
  KEEPALIVE_FRAME,
} from './frames.js';

function collect(maxLen?: number): { parser: FrameParser; frames: Buffer[] } {
  const frames: Buffer[] = [];
  // Copies, so the log does not depend on the chunks a test feeds (and may reuse).
  const parser = new FrameParser((_t, f) => frames.push(Buffer.from(f)), maxLen);
  return { parser, frames };
}

function rawFrame(type: number, body: Uint8Array): Buffer {
  const f = allocFrame(type, body.length);
  f.set(body, FRAME_HEADER_LEN);
  return f;
}

const frameArb = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 300 }))
  .map(([t, b]) => rawFrame(t, b));

afterEach(() => vi.restoreAllMocks());

describe('FrameParser', () => {
  it('parses frames coalesced in one chunk and hands out views without copying', () => {
    const a = encodeSendPacket(Buffer.alloc(32, 1), Buffer.from('hello'));
    const b = encodeRecvPacket(Buffer.alloc(32, 2), Buffer.from('world!'));
    const chunk = Buffer.concat([a, KEEPALIVE_FRAME, b]);
    const seen: Buffer[] = [];
    const types: number[] = [];
    new FrameParser((t, f) => {
      types.push(t);
      seen.push(f);
    }).push(chunk);
    expect(types).toEqual([0x04, 0x06, 0x05]);
    expect(seen.map((f) => f.toString('hex'))).toEqual([a, KEEPALIVE_FRAME, b].map((f) => f.toString('hex')));
    // Whole frames inside one chunk are views into that chunk.
    expect(seen[0]!.buffer).toBe(chunk.buffer);
    expect(seen[2]!.byteOffset).toBe(chunk.byteOffset + a.length + KEEPALIVE_FRAME.length);
  });

  it('parses a stream fed byte by byte, header splits included', () => {
    const frames = [
      encodeSendPacket(Buffer.alloc(32, 7), Buffer.alloc(1000, 9)),
      KEEPALIVE_FRAME,
      rawFrame(0x7f, Buffer.from('unknown type, still delivered')),
      encodeRecvPacket(Buffer.alloc(32, 3), Buffer.alloc(0)),
    ];
    const stream = Buffer.concat(frames);
    const { parser, frames: out } = collect();
    for (let i = 0; i < stream.length; i++) {
      parser.push(stream.subarray(i, i + 1));
      if (i < stream.length - 1) expect(out.length).toBeLessThan(frames.length);
    }
    expect(out.map((f) => f.toString('hex'))).toEqual(frames.map((f) => f.toString('hex')));
    expect(parser.pendingBytes).toBe(0);
  });

  it('emits nothing for a truncated frame and keeps its bytes pending', () => {
    const f = encodeSendPacket(Buffer.alloc(32), Buffer.alloc(100, 1));
    const { parser, frames } = collect();
    parser.push(f.subarray(0, 3));
    expect(parser.pendingBytes).toBe(3);
    parser.push(f.subarray(3, f.length - 1));
    expect(frames).toHaveLength(0);
    expect(parser.pendingBytes).toBe(f.length - 1);
    parser.push(f.subarray(f.length - 1));
    expect(frames).toHaveLength(1);
  });

  it('refuses an oversize length in the header step, before allocating, and stays failed', () => {
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    const { parser } = collect(1000);
    const hdr = Buffer.from([0x04, 0xff, 0xff, 0xff, 0xff]);
    let err: unknown;
    try {
      parser.push(hdr);
    } catch (e) {
      err = e;
    }
    expect(isTunnelError(err, 'DERP_PROTOCOL')).toBe(true);
    expect(alloc).not.toHaveBeenCalled();
    expect(() => parser.push(KEEPALIVE_FRAME)).toThrow(/already failed/);
  });

  it('accepts a frame exactly at the limit and refuses one byte more', () => {
    const ok = collect(64);
    ok.parser.push(rawFrame(1, Buffer.alloc(64)));
    expect(ok.frames).toHaveLength(1);
    const bad = collect(64);
    expect(() => bad.parser.push(rawFrame(1, Buffer.alloc(65)))).toThrow(/over the limit/);
  });

  it('property: any split of any frame sequence yields the same frames', () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 40 }),
        (frames, cuts) => {
          const stream = Buffer.concat(frames);
          const { parser, frames: out } = collect();
          let off = 0;
          for (let i = 0; off < stream.length; i++) {
            const n = cuts[i % cuts.length]!;
            parser.push(stream.subarray(off, off + n));
            off += n;
          }
          expect(out.map((f) => f.toString('hex'))).toEqual(frames.map((f) => f.toString('hex')));
        },
      ),
    );
  });

  it('property: random bytes give frames or a TunnelError, never allocating over the limit', () => {
    const maxLen = 512;
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 10 }), (chunks) => {
        const sizes: number[] = [];
        const real = Buffer.allocUnsafe;
        const spy = vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((n: number) => {
          sizes.push(n);
          return real(n);
        });
        try {
          const { parser } = collect(maxLen);
          for (const c of chunks) parser.push(Buffer.from(c));
          expect(parser.pendingBytes).toBeLessThanOrEqual(maxLen + FRAME_HEADER_LEN);
        } catch (e) {
          expect(isTunnelError(e, 'DERP_PROTOCOL')).toBe(true);
        } finally {
          spy.mockRestore();
        }
        for (const s of sizes) expect(s).toBeLessThanOrEqual(maxLen + FRAME_HEADER_LEN);
      }),
    );
  });
});

describe('FrameParser.whole', () => {
  it('is the chunk when it is exactly one frame and nothing is held back, else null', () => {
    const { parser, frames } = collect();
    const one = rawFrame(4, Buffer.from('payload'));
    expect(parser.whole(one)).toBe(one);
    expect(parser.whole(Buffer.concat([one, one]))).toBeNull();
    expect(parser.whole(one.subarray(0, 3))).toBeNull();
    expect(parser.whole(one.subarray(0, one.length - 1))).toBeNull();
    parser.push(one.subarray(0, 2)); // a frame split across chunks: held back
    expect(parser.whole(one)).toBeNull();
    parser.push(one.subarray(2));
    expect(parser.whole(one)).toBe(one);
    expect(frames.length).toBe(1);
  });

  it('refuses a frame over the length limit as push() does', () => {
    const { parser } = collect(16);
    const big = rawFrame(4, Buffer.alloc(17));
    expect(() => parser.whole(big)).toThrow(expect.objectContaining({ code: 'DERP_PROTOCOL' }));
    expect(() => parser.push(rawFrame(4, Buffer.alloc(1)))).toThrow();
  });
});
