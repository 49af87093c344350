/**
 * Failure counting for registration: after `max` failures for one key (a source address, or a
 * cluster name) inside `windowMs`, further attempts are refused until the window passes. The map is
 * bounded: when full, the entry touched longest ago is dropped (Map keeps insertion order and every
 * touch re-inserts), so a flood of fresh keys cannot grow memory.
 */
import type { Clock } from '../shared/clock.js';

export interface FailureLimiterOptions {
  max: number;
  windowMs: number;
  maxEntries: number;
}

export class FailureLimiter {
  readonly #opts: FailureLimiterOptions;
  readonly #clock: Clock;
  readonly #entries = new Map<string, { start: number; count: number }>();
  #evicted = 0;

  constructor(clock: Clock, opts: FailureLimiterOptions) {
    this.#clock = clock;
    this.#opts = opts;
  }

  /** True if `key` has used up its failures in the current window. */
  blocked(key: string): boolean {
    const e = this.#entries.get(key);
    if (!e) return false;
    if (this.#clock.now() - e.start >= this.#opts.windowMs) {
      this.#entries.delete(key);
      return false;
    }
    return e.count >= this.#opts.max;
  }

  fail(key: string): void {
    const now = this.#clock.now();
    let e = this.#entries.get(key);
    if (e && now - e.start >= this.#opts.windowMs) e = undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e ? { start: e.start, count: e.count + 1 } : { start: now, count: 1 });
    while (this.#entries.size > this.#opts.maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
      this.#evicted++;
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  get evicted(): number {
    return this.#evicted;
  }
}
