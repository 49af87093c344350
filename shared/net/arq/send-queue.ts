/**
 * Bytes written but not yet cut into segments. A segment owns its bytes: take() copies what it spans out of
 * the written buffers (into one pooled buffer when large, shared/net/buffers/buffer-pool.ts), so the written buffers
 * (upstream reads, mux headers) are dropped as soon as they are cut and die young, while the segment waits
 * in the send window for its acknowledgement. The datagram writer then copies from that one buffer.
 */
import { type BufferPool, POOLED_MIN_BYTES } from '../buffers/buffer-pool.js';
import { RingQueue } from '../buffers/ring-queue.js';

/** Written buffers are bounded by the caller's byte limit (the session's send buffer), not by count. */
export class SendQueue {
  readonly #bufs = new RingQueue<Buffer>({ capacity: Number.POSITIVE_INFINITY });
  /** Bytes of the oldest buffer already taken. */
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
   * Removes and returns up to `n` bytes (n > 0, queue not empty) as a buffer of their own: taken from `pool`
   * when at least POOLED_MIN_BYTES long and no longer than the pool's buffers (the result is then a view of
   * the pooled buffer: give it back with pool.give() once acknowledged), else a plain allocation.
   */
  take(n: number, pool: BufferPool | null = null): Buffer {
    const len = Math.min(n, this.#bytes);
    const out =
      pool && len >= POOLED_MIN_BYTES && len <= pool.size
        ? pool.take().subarray(0, len)
        : Buffer.allocUnsafe(len);
    let filled = 0;
    while (filled < len) {
      const b = this.#bufs.peek();
      if (b === undefined) break; // unreachable: len <= the bytes held
      const k = Math.min(b.length - this.#off, len - filled);
      b.copy(out, filled, this.#off, this.#off + k);
      filled += k;
      this.#off += k;
      if (this.#off === b.length) {
        this.#bufs.shift();
        this.#off = 0;
      }
    }
    this.#bytes -= len;
    return out;
  }

  clear(): void {
    this.#bufs.clear();
    this.#off = 0;
    this.#bytes = 0;
  }
}
