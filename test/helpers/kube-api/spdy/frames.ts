/**
 * SPDY/3.1 framing (draft-mbelshe-httpbis-spdy-00 with the 3.1 flow-control frames), the part kubectl's
 * exec, attach and port-forward use. Every frame has an 8-byte head: a control frame starts with the control bit,
 * version 3 and a 16-bit type; a data frame with a 31-bit stream id. Both end in 8 bits of flags and a 24-bit length.
 */
export const CONTROL = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

export const FLAG_FIN = 0x01;
const HEAD = 8;
/** Larger frames are refused: kubectl sends at most 32 KiB of data per frame. */
export const MAX_FRAME_PAYLOAD = 1 << 20;

export type Frame =
  | { kind: 'control'; type: number; flags: number; payload: Buffer }
  | { kind: 'data'; streamId: number; flags: number; payload: Buffer };

/** Splits a byte stream into frames; bytes of a frame not yet complete wait for the next chunk. */
export class FrameReader {
  #pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    const frames: Frame[] = [];
    while (this.#pending.length >= HEAD) {
      const length = this.#pending.readUIntBE(5, 3);
      if (length > MAX_FRAME_PAYLOAD) throw new Error(`SPDY frame of ${length} bytes refused`);
      if (this.#pending.length < HEAD + length) break;
      const flags = this.#pending[4]!;
      const payload = this.#pending.subarray(HEAD, HEAD + length);
      const word = this.#pending.readUInt32BE(0);
      if (word & 0x80000000) {
        const version = (word >>> 16) & 0x7fff;
        if (version !== 3) throw new Error(`SPDY version ${version} refused`);
        frames.push({ kind: 'control', type: word & 0xffff, flags, payload });
      } else {
        frames.push({ kind: 'data', streamId: word, flags, payload });
      }
      this.#pending = this.#pending.subarray(HEAD + length);
    }
    return frames;
  }
}

function head(first: number, flags: number, length: number): Buffer {
  const out = Buffer.alloc(HEAD);
  out.writeUInt32BE(first >>> 0, 0);
  out.writeUInt32BE(length, 4);
  out[4] = flags;
  return out;
}

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  return Buffer.concat([head(0x80030000 | type, flags, payload.length), payload]);
}

export function dataFrame(streamId: number, flags: number, payload: Buffer): Buffer {
  return Buffer.concat([head(streamId & 0x7fffffff, flags, payload.length), payload]);
}

/** A header block before compression: a count, then each name and value with a 4-byte length. */
export function encodeHeaderBlock(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [u32(Object.keys(headers).length)];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name.toLowerCase());
    const v = Buffer.from(value);
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(block: Buffer): Record<string, string> {
  const headers: Record<string, string> = {};
  let at = 4;
  const field = (): string => {
    const length = block.readUInt32BE(at);
    if (at + 4 + length > block.length) throw new Error('SPDY header block truncated');
    const text = block.subarray(at + 4, at + 4 + length).toString();
    at += 4 + length;
    return text;
  };
  for (let i = block.readUInt32BE(0); i > 0; i--) {
    const name = field();
    headers[name] = field();
  }
  return headers;
}

export function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value >>> 0);
  return out;
}
