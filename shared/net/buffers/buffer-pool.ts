/**
 * Pools of fixed-size buffers for the send path, so that its large buffers are reused instead of being
 * allocated per segment and per datagram (a 64 KiB Buffer held for a few milliseconds survives several
 * scavenges, is promoted, and its external memory is then only freed by a mark-compact GC).
 *
 * One pool hands out buffers of one size: take() returns one from the free list or a fresh
 * Buffer.allocUnsafeSlow (its own ArrayBuffer, never Node's shared pool); give() puts it back. The free
 * lists of all pools sharing a budget (by default: every pool of the process) hold at most
 * POOL_FREE_BYTES_CAP bytes together; a buffer given back beyond that is left to the garbage collector.
 * give() of a buffer this pool did not hand out, or one given back already, is refused and counted (it
 * never throws and never corrupts the free list). A pool knows its buffers by their ArrayBuffer, marked with
 * module-private symbols (the pool that handed it out, the whole buffer): a view of a taken buffer may be
 * given back in its place, and memory that is never given back costs no bookkeeping (no WeakMap entries for
 * the garbage collector to clear).
 *
 * Handing down (the send path): the layer that fills a pooled buffer and hands it down whole marks it with
 * handDown(); the bottom layer's SendSink (send-sink.ts), once its socket no longer needs the bytes, gives
 * back the view it holds (any view of the same memory, e.g. grown in place by the layers in between): the
 * buffer goes back if and only if it was handed down and not given back yet. A layer in between that
 * copies (no room) just drops the original: its copy is not marked, so giving it back does nothing.
 */
import { TunnelError } from '../../errors.js';

/** Bytes the free lists of one budget (the process, by default) may hold together: 8 MiB. */
export const POOL_FREE_BYTES_CAP = 8 * 1024 * 1024;
/** Buffers smaller than this are not worth pooling: the send path allocates them as before. */
export const POOLED_MIN_BYTES = 8 * 1024;
/** Distinct sizes poolFor() keeps shared pools for; further sizes get a pool of their own. */
export const MAX_SHARED_POOLS = 16;

/** Bytes on free lists, shared by the pools that use it. */
export class PoolBudget {
  readonly capBytes: number;
  freeBytes = 0;
  constructor(capBytes: number) {
    this.capBytes = capBytes;
  }
}

/** The budget every pool uses unless given its own. */
export const processBudget = new PoolBudget(POOL_FREE_BYTES_CAP);

export interface BufferPoolStats {
  /** take() calls. */
  takes: number;
  /** take() calls served by a fresh allocation (the free list was empty). */
  fresh: number;
  /** Buffers given back and kept on the free list. */
  kept: number;
  /** Buffers given back while the budget was full (left to the garbage collector). */
  discarded: number;
  /** give() calls refused: not from this pool, or given back already. */
  refused: number;
}

export interface BufferPoolOptions {
  budget?: PoolBudget;
  /** Tests: every buffer given back is filled with this byte, so a reader of freed memory sees it. */
  poison?: number;
}

const OWNER = Symbol('buffer-pool owner');
const WHOLE = Symbol('buffer-pool whole buffer');
const HANDED = Symbol('buffer-pool handed down');
/** The marks a pooled buffer's memory carries (absent on any other ArrayBuffer). */
interface Marked {
  /** The pool it is handed out from; null while on a free list or after it left the pool. */
  [OWNER]?: BufferPool | null;
  /** The buffer take() returned (the whole memory). */
  [WHOLE]?: Buffer;
  /** The pool it goes back to when released by the bottom of the send path; null when not handed down. */
  [HANDED]?: BufferPool | null;
}
const marks = (view: Uint8Array): Marked => view.buffer as Marked;

export class BufferPool {
  readonly size: number;
  readonly stats: BufferPoolStats = { takes: 0, fresh: 0, kept: 0, discarded: 0, refused: 0 };
  readonly #budget: PoolBudget;
  readonly #poison: number | undefined;
  #free: Buffer[] = [];

  constructor(size: number, opts: BufferPoolOptions = {}) {
    if (!Number.isInteger(size) || size < 1) {
      throw new TunnelError('BAD_CONFIG', `buffer pool size ${size} is not a positive integer`);
    }
    this.size = size;
    this.#budget = opts.budget ?? processBudget;
    this.#poison = opts.poison;
  }

  /** Buffers on the free list. */
  get freeCount(): number {
    return this.#free.length;
  }

  /** A buffer of `size` bytes, not initialised, owned by the caller until give(). */
  take(): Buffer {
    this.stats.takes++;
    let b = this.#free.pop();
    if (b) this.#budget.freeBytes -= this.size;
    else {
      b = Buffer.allocUnsafeSlow(this.size);
      const m = marks(b);
      m[WHOLE] = b;
      m[HANDED] = null;
      this.stats.fresh++;
    }
    marks(b)[OWNER] = this;
    return b;
  }

  /** Whether `view`'s memory was handed out by this pool and not given back yet. */
  owns(view: Uint8Array): boolean {
    return marks(view)[OWNER] === this;
  }

  /**
   * Gives back the buffer take() returned (or any view of it). The caller must not touch its memory
   * afterwards. Returns false (and counts it) when this pool does not hold it as handed out.
   */
  give(view: Uint8Array): boolean {
    const m = marks(view);
    const b = m[WHOLE];
    if (m[OWNER] !== this || !b) {
      this.stats.refused++;
      return false;
    }
    m[OWNER] = null;
    m[HANDED] = null;
    if (this.#poison !== undefined) b.fill(this.#poison);
    const budget = this.#budget;
    if (budget.freeBytes + this.size > budget.capBytes) {
      this.stats.discarded++;
      return true;
    }
    budget.freeBytes += this.size;
    this.#free.push(b);
    this.stats.kept++;
    return true;
  }

  /** Empties the free list (its bytes leave the budget). */
  drain(): void {
    this.#budget.freeBytes -= this.#free.length * this.size;
    this.#free = [];
  }
}

const shared = new Map<number, BufferPool>();

/** The process-wide pool of `size`-byte buffers (shared by every session of the process). */
export function poolFor(size: number): BufferPool {
  let p = shared.get(size);
  if (p) return p;
  p = new BufferPool(size);
  if (shared.size < MAX_SHARED_POOLS) shared.set(size, p);
  return p;
}

/**
 * Marks `buf` (taken from `pool`, filled, and about to be handed down whole) so that the bottom of the send
 * path's SendSink gives it back. Nothing above the bottom may read it once handed down.
 */
export function handDown(pool: BufferPool, buf: Uint8Array): void {
  if (pool.owns(buf)) marks(buf)[HANDED] = pool;
}

/**
 * The pool `view`'s memory goes back to once the bottom of the send path is done with it (its SendSink,
 * send-sink.ts, gives it back), or null when it is not handed down (or was given back already).
 */
export function handedDownTo(view: Uint8Array): BufferPool | null {
  return marks(view)[HANDED] ?? null;
}

/** Whether `view`'s memory is handed down and not yet released (tests, assertions). */
export function isHandedDown(view: Uint8Array): boolean {
  return !!marks(view)[HANDED];
}
