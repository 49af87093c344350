/**
 * The write budget of each access key: a token bucket holding `perMinute` writes, refilled at `perMinute` a
 * minute, so a key may make bursts of up to `perMinute` mutating calls and `perMinute` a minute on average. Every
 * such call writes an audit row, so the budget bounds how fast one key can grow the audit log. Kept in memory per
 * relay process (each replica of a fleet counts its own). At most `maxKeys` buckets are held: when full, the one
 * touched longest ago is dropped (Map insertion order, re-inserted on every touch), which only gives its key a
 * full bucket again.
 */
import type { Clock } from '../../../shared/clock.js';

export interface WriteBudgetOptions {
  perMinute: number;
  maxKeys: number;
}

interface Bucket {
  tokens: number;
  /** Monotonic ms of the last refill. */
  at: number;
}

export type Spend = { ok: true } | { ok: false; retryAfterMs: number };

export class WriteBudget {
  readonly options: WriteBudgetOptions;
  readonly #clock: Clock;
  readonly #buckets = new Map<string, Bucket>();
  /** Writes refused since the start. */
  refused = 0;

  constructor(clock: Clock, options: WriteBudgetOptions) {
    this.#clock = clock;
    this.options = options;
  }

  /** Takes one write from `keyId`'s bucket, or says how long until one is there. */
  spend(keyId: string): Spend {
    const now = this.#clock.now();
    const { perMinute } = this.options;
    const rate = perMinute / 60_000;
    const held = this.#buckets.get(keyId);
    const tokens = held ? Math.min(perMinute, held.tokens + (now - held.at) * rate) : perMinute;
    this.#buckets.delete(keyId);
    if (tokens < 1) {
      this.#buckets.set(keyId, { tokens, at: now });
      this.refused++;
      return { ok: false, retryAfterMs: Math.ceil((1 - tokens) / rate) };
    }
    this.#buckets.set(keyId, { tokens: tokens - 1, at: now });
    for (const oldest of this.#buckets.keys()) {
      if (this.#buckets.size <= this.options.maxKeys) break;
      this.#buckets.delete(oldest);
    }
    return { ok: true };
  }

  /** Buckets held now. */
  get size(): number {
    return this.#buckets.size;
  }
}
