/**
 * Bytes written but not yet cut into segments. Segments are views into the written buffers when a
 * whole segment lies inside one of them; bytes are copied only when a segment spans two writes.
 */
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

  /** Removes and returns up to `n` bytes (n > 0, queue not empty). */
  take(n: number): Buffer {
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
    const out = Buffer.allocUnsafe(len);
    let filled = 0;
    while (filled < len) {
      const b = this.#bufs[this.#head]!;
      const k = Math.min(b.length - this.#off, len - filled);
      b.copy(out, filled, this.#off, this.#off + k);
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
