/**
 * Bytes written but not yet cut into segments. A segment is a view into a written buffer, or the list of
 * views when it spans several writes (the mux writes a 12-byte header and its payload separately): the
 * bytes are never copied here, only once into the datagram.
 */

/** A segment's data: one view, or the views it spans, in order. */
export type Segment = Buffer | Buffer[];

/** Total bytes of a segment. */
export function segmentLength(d: Segment): number {
  if (!Array.isArray(d)) return d.length;
  let n = 0;
  for (const b of d) n += b.length;
  return n;
}

/** The segment as one Buffer (a copy only when it is a list of views). */
export function flatSegment(d: Segment): Buffer {
  return Array.isArray(d) ? Buffer.concat(d) : d;
}
export class SendQueue {
  #bufs: Buffer[] = [];
  #head = 0;
  #off = 0;
  #bytes = 0;

  get bytes(): number {
    return this.#bytes;
  }

  push(b: Buffer): void {
    if (b.length === 0) return;
    this.#bufs.push(b);
    this.#bytes += b.length;
  }

  /**
   * Removes and returns up to `n` bytes (n > 0, queue not empty): one view when they lie inside one written
   * buffer, otherwise the list of views they span (never a copy; the datagram writer copies them once).
   */
  take(n: number): Segment {
    const first = this.#bufs[this.#head]!;
    const avail = first.length - this.#off;
    if (avail >= n) {
      const out = first.subarray(this.#off, this.#off + n);
      this.#off += n;
      if (this.#off === first.length) this.#advance();
      this.#bytes -= n;
      return out;
    }
    const len = Math.min(n, this.#bytes);
    const out: Buffer[] = [];
    let filled = 0;
    while (filled < len) {
      const b = this.#bufs[this.#head]!;
      const k = Math.min(b.length - this.#off, len - filled);
      out.push(b.subarray(this.#off, this.#off + k));
      filled += k;
      this.#off += k;
      if (this.#off === b.length) this.#advance();
    }
    this.#bytes -= len;
    return out;
  }

  clear(): void {
    this.#bufs = [];
    this.#head = 0;
    this.#off = 0;
    this.#bytes = 0;
  }

  #advance(): void {
    this.#bufs[this.#head] = undefined as unknown as Buffer;
    this.#head++;
    this.#off = 0;
    if (this.#head === this.#bufs.length) {
      this.#bufs.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#bufs.length) {
      this.#bufs = this.#bufs.slice(this.#head);
      this.#head = 0;
    }
  }
}
