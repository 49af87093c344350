/**
 * Sliding-window replay filter (RFC 6479, as wireguard-go replay/replay.go): a ring of 128 64-bit
 * blocks (kept as 256 u32 words), accepting counters up to (128-1)*64 = 8128 behind the highest seen.
 *
 * Counters arrive as numbers while they are safe integers (the hot path, no bigint allocation) and
 * as bigints beyond 2^53; once a bigint counter is accepted the filter stays in bigint mode.
 */
const RING_BLOCKS = 128;
const BLOCK_MASK = RING_BLOCKS - 1;
export const REPLAY_WINDOW_SIZE = (RING_BLOCKS - 1) * 64; // 8128
const WINDOW_BIG = BigInt(REPLAY_WINDOW_SIZE);

export class ReplayFilter {
  #last = 0;
  #lastBig: bigint | null = null;
  readonly #ring = new Uint32Array(RING_BLOCKS * 2);

  reset(): void {
    this.#last = 0;
    this.#lastBig = null;
    this.#ring.fill(0);
  }

  /** True when `counter` is below `limit`, inside the window and not seen before (and records it). */
  validate(counter: number | bigint, limit: bigint): boolean {
    if (counter >= limit) return false;
    if (typeof counter === 'number' && this.#lastBig === null && Number.isSafeInteger(counter)) {
      return this.#validateNumber(counter);
    }
    return this.#validateBig(BigInt(counter));
  }

  #validateNumber(counter: number): boolean {
    const indexBlock = Math.floor(counter / 64);
    if (counter > this.#last) {
      const current = Math.floor(this.#last / 64);
      const diff = Math.min(indexBlock - current, RING_BLOCKS);
      for (let i = current + 1; i <= current + diff; i++) this.#clearBlock(i % RING_BLOCKS);
      this.#last = counter;
    } else if (this.#last - counter > REPLAY_WINDOW_SIZE) {
      return false;
    }
    return this.#testAndSet(indexBlock % RING_BLOCKS, counter % 64);
  }

  #validateBig(counter: bigint): boolean {
    const last = this.#lastBig ?? BigInt(this.#last);
    const indexBlock = counter >> 6n;
    if (counter > last) {
      const current = last >> 6n;
      let diff = indexBlock - current;
      if (diff > BigInt(RING_BLOCKS)) diff = BigInt(RING_BLOCKS);
      for (let i = current + 1n; i <= current + diff; i++) this.#clearBlock(Number(i & BigInt(BLOCK_MASK)));
      this.#lastBig = counter;
    } else {
      if (last - counter > WINDOW_BIG) return false;
      this.#lastBig = last;
    }
    return this.#testAndSet(Number(indexBlock & BigInt(BLOCK_MASK)), Number(counter & 63n));
  }

  #clearBlock(block: number): void {
    this.#ring[block * 2] = 0;
    this.#ring[block * 2 + 1] = 0;
  }

  #testAndSet(block: number, bit: number): boolean {
    const word = block * 2 + (bit >> 5);
    const mask = (1 << (bit & 31)) >>> 0;
    const old = this.#ring[word]!;
    if ((old & mask) !== 0) return false;
    this.#ring[word] = (old | mask) >>> 0;
    return true;
  }
}
