/**
 * Packs segments into datagrams of at most `mtu` bytes (layout in segment.ts) and hands each full datagram
 * to `output`. One copy of the data, into the datagram buffer.
 */
import type { ArqStats } from './arq-options.js';
import { FRAG_HEADER, SEG_HEADER } from './segment.js';

export class DatagramWriter {
  mtu: number;
  readonly #conv: number;
  readonly #inc: number;
  readonly #output: (d: Buffer) => void;
  readonly #stats: ArqStats;
  #dg: Buffer | null = null;
  #len = 0;
  #spare: Buffer | null = null;

  constructor(conv: number, inc: number, mtu: number, output: (d: Buffer) => void, stats: ArqStats) {
    this.#conv = conv;
    this.#inc = inc;
    this.mtu = mtu;
    this.#output = output;
    this.#stats = stats;
  }

  /** Bytes in the datagram being built (0 = none). */
  get pending(): number {
    return this.#len;
  }

  /** Appends one segment, sending the datagram being built first if the segment does not fit. */
  put(
    cmd: number,
    wnd: number,
    ts: number,
    sn: number,
    una: number,
    data: Buffer | null,
    fragOff = -1,
    fragTotal = 0,
  ): void {
    const extra = fragOff >= 0 ? FRAG_HEADER : 0;
    const dlen = (data ? data.length : 0) + extra;
    if (this.#dg && this.#len + SEG_HEADER + dlen > this.#dg.length) this.finish();
    if (!this.#dg) {
      const spare = this.#spare;
      this.#spare = null;
      this.#dg = spare && spare.length === this.mtu ? spare : Buffer.allocUnsafe(this.mtu);
      this.#len = 0;
    }
    const b = this.#dg;
    let o = this.#len;
    b.writeUInt32LE(this.#conv, o);
    b[o + 4] = cmd;
    b[o + 5] = this.#inc;
    b.writeUInt16LE(wnd, o + 6);
    b.writeUInt32LE(ts >>> 0, o + 8);
    b.writeUInt32LE(sn >>> 0, o + 12);
    b.writeUInt32LE(una >>> 0, o + 16);
    b.writeUInt32LE(dlen, o + 20);
    o += SEG_HEADER;
    if (extra) {
      b.writeUInt16LE(fragOff, o);
      b.writeUInt16LE(fragTotal, o + 2);
      o += FRAG_HEADER;
    }
    if (data) o += data.copy(b, o);
    this.#len = o;
  }

  /** Sends the datagram being built, if any. */
  finish(): void {
    const dg = this.#dg;
    if (!dg || this.#len === 0) return;
    let out: Buffer;
    if (this.#len * 2 < dg.length && dg.length > 4096) {
      // Small datagram in a large (relay-MTU) buffer: copy it out and keep the buffer for the next one.
      out = Buffer.from(dg.subarray(0, this.#len));
      this.#spare = dg;
    } else {
      out = dg.subarray(0, this.#len);
    }
    this.#dg = null;
    this.#len = 0;
    this.#stats.datagramsOut++;
    this.#stats.bytesOut += out.length;
    this.#output(out);
  }
}
