/**
 * Sliding-window replay filter (RFC 6479, as wireguard-go replay/replay.go): a ring of 128 64-bit
 * blocks (kept as 256 u32 words), accepting counters up to (128-1)*64 = 8128 behind the highest seen.
 */
const BLOCK_BITS_LOG = 6n;
const RING_BLOCKS = 128n;
const BLOCK_MASK = RING_BLOCKS - 1n;
export const REPLAY_WINDOW_SIZE = Number((RING_BLOCKS - 1n) * 64n); // 8128

export class ReplayFilter {
  #last = 0n;
  readonly #ring = new Uint32Array(Number(RING_BLOCKS) * 2);

  reset(): void {
    this.#last = 0n;
    this.#ring.fill(0);
  }

  /** True when `counter` is below `limit`, inside the window and not seen before (and records it). */
  validate(counter: bigint, limit: bigint): boolean {
    if (counter >= limit) return false;
    let indexBlock = counter >> BLOCK_BITS_LOG;
    if (counter > this.#last) {
      const current = this.#last >> BLOCK_BITS_LOG;
      let diff = indexBlock - current;
      if (diff > RING_BLOCKS) diff = RING_BLOCKS;
      for (let i = current + 1n; i <= current + diff; i++) {
        const b = Number(i & BLOCK_MASK) * 2;
        this.#ring[b] = 0;
        this.#ring[b + 1] = 0;
      }
      this.#last = counter;
    } else if (this.#last - counter > BigInt(REPLAY_WINDOW_SIZE)) {
      return false;
    }
    indexBlock &= BLOCK_MASK;
    const bit = Number(counter & 63n);
    const word = Number(indexBlock) * 2 + (bit >> 5);
    const mask = (1 << (bit & 31)) >>> 0;
    const old = this.#ring[word]!;
    if ((old & mask) !== 0) return false;
    this.#ring[word] = (old | mask) >>> 0;
    return true;
  }
}
