/**
 * Failure counting for registration, by source. A key's window opens at its first failure and lasts
 * `windowMs`; once `max` failures fall in it the key is limited until the window ends (failures while
 * limited do not extend it). The map is bounded: when full, the entry touched longest ago is dropped
 * (Map keeps insertion order and every touch re-inserts), so a flood of fresh keys cannot grow memory;
 * dropping an entry only ever lifts a limit.
 */
import type { Clock } from '../../shared/clock.js';

export interface FailureLimiterOptions {
  max: number;
  windowMs: number;
  maxEntries: number;
}

export interface LimitEntry {
  key: string;
  failures: number;
  /** Monotonic clock time of the window's first failure. */
  windowStart: number;
  /** Milliseconds until the window ends. */
  remainingMs: number;
  limited: boolean;
}

interface Counter {
  start: number;
  count: number;
}

export class FailureLimiter {
  readonly #opts: FailureLimiterOptions;
  readonly #clock: Clock;
  readonly #entries = new Map<string, Counter>();
  #evicted = 0;

  constructor(clock: Clock, opts: FailureLimiterOptions) {
    this.#clock = clock;
    this.#opts = opts;
  }

  get options(): FailureLimiterOptions {
    return this.#opts;
  }

  /** The live counter of `key`, dropping it when its window has ended. */
  #live(key: string): Counter | undefined {
    const e = this.#entries.get(key);
    if (e && this.#clock.now() - e.start >= this.#opts.windowMs) {
      this.#entries.delete(key);
      return undefined;
    }
    return e;
  }

  #view(key: string, e: Counter): LimitEntry {
    return {
      key,
      failures: e.count,
      windowStart: e.start,
      remainingMs: Math.max(0, e.start + this.#opts.windowMs - this.#clock.now()),
      limited: e.count >= this.#opts.max,
    };
  }

  /** True if `key` has used up its failures in the current window. */
  blocked(key: string): boolean {
    return this.limitOf(key) !== null;
  }

  /** The entry of `key` when it is limited, else null. */
  limitOf(key: string): LimitEntry | null {
    const e = this.#live(key);
    return e && e.count >= this.#opts.max ? this.#view(key, e) : null;
  }

  /** Counts a failure; returns the entry after it (`limited` turns true on the failure that reaches `max`). */
  fail(key: string): LimitEntry {
    const now = this.#clock.now();
    const e = this.#live(key);
    const next = e ? { start: e.start, count: e.count + 1 } : { start: now, count: 1 };
    this.#entries.delete(key);
    this.#entries.set(key, next);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#opts.maxEntries) break;
      this.#entries.delete(oldest);
      this.#evicted++;
    }
    return this.#view(key, next);
  }

  /** Every key still counting, most recently failed last. */
  list(): LimitEntry[] {
    const out: LimitEntry[] = [];
    for (const key of [...this.#entries.keys()]) {
      const e = this.#live(key);
      if (e) out.push(this.#view(key, e));
    }
    return out;
  }

  /** Forgets `key`; returns what it held, or null if it was not counting. */
  clear(key: string): LimitEntry | null {
    const e = this.#live(key);
    if (!e) return null;
    this.#entries.delete(key);
    return this.#view(key, e);
  }

  /** Forgets every key; returns what they held. */
  clearAll(): LimitEntry[] {
    const all = this.list();
    this.#entries.clear();
    return all;
  }

  get size(): number {
    return this.#entries.size;
  }

  get evicted(): number {
    return this.#evicted;
  }
}
