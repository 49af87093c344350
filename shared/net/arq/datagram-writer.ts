/**
 * Packs segments into datagrams of at most `mtu` bytes (layout in segment.ts) and hands each full datagram
 * to `output`. One copy of the data, into the datagram buffer.
 *
 * With `headroom`/`tailroom` > 0 each datagram is allocated with that much free room before and after it
 * and handed to `output` as a view granted that room (shared/net/buffers/packet-room.ts): the layers below (inner
 * IPv4/UDP, WireGuard, DERP) then write their headers and trailers in place, so a datagram costs one
 * allocation all the way to the socket. The datagram's unused bytes up to `mtu` count as tailroom too.
 *
 * With room, every datagram buffer comes from a pool (shared/net/buffers/buffer-pool.ts, `pools`, by default the
 * process-wide one of that size) and is handed down whole (handDown()): the bottom of the send path (the
 * relay's socket, the direct path's UDP socket) gives it back through its SendSink (shared/net/buffers/send-sink.ts) once its socket is done
 * with it; one it drops is left to the garbage collector. A small datagram built in a large (relay-MTU)
 * buffer is copied out and the buffer given back at once.
 */

import { TunnelError } from '../../errors.js';
import { type BufferPool, handDown, poolFor } from '../buffers/buffer-pool.js';
import { grantRoom, MAX_ROOM } from '../buffers/packet-room.js';
import type { ArqStats } from './arq-options.js';
import { FRAG_HEADER, SEG_HEADER } from './segment.js';

/** Small datagrams built in a buffer larger than this are copied out, and the buffer reused. */
const SPARE_MIN = 4096;

export interface DatagramWriterOptions {
  /** Conversation id written in every segment header. */
  conv: number;
  /** This side's incarnation, written in every segment header. */
  incarnation: number;
  mtu: number;
  output: (datagram: Buffer) => void;
  stats: ArqStats;
  /** Free bytes kept before each datagram for the layers below (0..1024). */
  headroom?: number;
  /** Free bytes kept after each datagram (0..1024). */
  tailroom?: number;
  /** The buffer pool for a datagram size (default: the process-wide pools). */
  pools?: (size: number) => BufferPool;
}

/**
 * The header fields of one segment put into a datagram (layout in segment.ts). The caller may reuse one
 * object for every put(): the writer reads it during the call only.
 */
export interface SegmentFields {
  cmd: number;
  /** Receive window advertised, in segments. */
  wnd: number;
  /** Send timestamp (ms, 32 bits) echoed in the acknowledgement. */
  ts: number;
  sn: number;
  /** Next sequence number this side expects (cumulative acknowledgement). */
  una: number;
  /** Offset of this piece in its segment when the segment is sent in pieces (CMD_PUSHF), else -1. */
  fragOffset: number;
  /** Length of the whole segment when sent in pieces, else 0. */
  fragTotal: number;
}

export class DatagramWriter {
  mtu: number;
  readonly #conv: number;
  readonly #inc: number;
  readonly #output: (d: Buffer) => void;
  readonly #stats: ArqStats;
  readonly #head: number;
  readonly #tail: number;
  /** The whole allocation of the datagram being built: headroom | mtu bytes | tailroom. */
  #raw: Buffer | null = null;
  /** Segment bytes written so far, from #raw[#head]. */
  #len = 0;
  /** The pool #raw came from (null: a plain allocation). */
  #rawPool: BufferPool | null = null;
  #spare: Buffer | null = null;
  readonly #pools: (size: number) => BufferPool;

  constructor(opts: DatagramWriterOptions) {
    const { headroom = 0, tailroom = 0 } = opts;
    for (const [name, v] of [
      ['headroom', headroom],
      ['tailroom', tailroom],
    ] as const) {
      if (!Number.isInteger(v) || v < 0 || v > 1024) {
        throw new TunnelError('BAD_CONFIG', `ARQ ${name} ${v} is out of range 0..1024`);
      }
    }
    this.#conv = opts.conv;
    this.#inc = opts.incarnation;
    this.mtu = opts.mtu;
    this.#output = opts.output;
    this.#stats = opts.stats;
    this.#head = headroom;
    this.#tail = tailroom;
    this.#pools = opts.pools ?? poolFor;
  }

  /** Size of a datagram buffer: headroom + mtu + tailroom. */
  get bufferSize(): number {
    return this.#head + this.mtu + this.#tail;
  }

  /** Bytes in the datagram being built (0 = none). */
  get pending(): number {
    return this.#len;
  }

  /** Appends one segment, sending the datagram being built first if the segment does not fit. */
  put(fields: SegmentFields, data: Buffer | null): void {
    const extra = fields.fragOffset >= 0 ? FRAG_HEADER : 0;
    const dlen = (data ? data.length : 0) + extra;
    const head = this.#head;
    if (this.#raw && this.#len + SEG_HEADER + dlen > this.#raw.length - head - this.#tail) this.finish();
    if (!this.#raw) {
      const size = head + this.mtu + this.#tail;
      const spare = this.#spare;
      this.#spare = null;
      this.#rawPool = null;
      if (this.#head + this.#tail > 0) {
        const pool = this.#pools(size);
        this.#rawPool = pool;
        this.#raw = pool.take();
      } else {
        this.#raw = spare && spare.length === size ? spare : this.#alloc(size);
      }
      this.#len = 0;
    }
    const b = this.#raw;
    let o = head + this.#len;
    b.writeUInt32LE(this.#conv, o);
    b[o + 4] = fields.cmd;
    b[o + 5] = this.#inc;
    b.writeUInt16LE(fields.wnd, o + 6);
    b.writeUInt32LE(fields.ts >>> 0, o + 8);
    b.writeUInt32LE(fields.sn >>> 0, o + 12);
    b.writeUInt32LE(fields.una >>> 0, o + 16);
    b.writeUInt32LE(dlen, o + 20);
    o += SEG_HEADER;
    if (extra) {
      b.writeUInt16LE(fields.fragOffset, o);
      b.writeUInt16LE(fields.fragTotal, o + 2);
      o += FRAG_HEADER;
    }
    if (data) o += data.copy(b, o);
    this.#len = o - head;
  }

  /** Sends the datagram being built, if any. */
  finish(): void {
    const raw = this.#raw;
    const len = this.#len;
    if (!raw || len === 0) return;
    const head = this.#head;
    const cap = raw.length - head - this.#tail;
    let out: Buffer;
    if (len * 2 < cap && cap > SPARE_MIN) {
      // Small datagram in a large (relay-MTU) buffer: copy it out and keep the buffer for the next one.
      const copy = this.#alloc(head + len + this.#tail);
      raw.copy(copy, head, head, head + len);
      out = this.#view(copy, len);
      if (this.#rawPool) this.#rawPool.give(raw);
      else this.#spare = raw;
    } else {
      out = this.#view(raw, len);
      if (this.#rawPool) handDown(this.#rawPool, raw);
    }
    this.#raw = null;
    this.#rawPool = null;
    this.#len = 0;
    this.#stats.datagramsOut++;
    this.#stats.bytesOut += out.length;
    this.#output(out);
  }

  #alloc(size: number): Buffer {
    // Without room, the pool may serve small datagrams; with room the allocation must be the datagram's own.
    return this.#head + this.#tail === 0 ? Buffer.allocUnsafe(size) : Buffer.allocUnsafeSlow(size);
  }

  /** The datagram of `len` bytes in `raw`, granted the room around it when the writer reserves any. */
  #view(raw: Buffer, len: number): Buffer {
    const head = this.#head;
    const out = raw.subarray(head, head + len);
    if (head + this.#tail === 0) return out;
    return grantRoom(out, head, Math.min(raw.length - head - len, MAX_ROOM));
  }
}
