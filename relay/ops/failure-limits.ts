/**
 * The failed-registration limit as the routes use it: asynchronous, so it can live in memory (one relay,
 * `FailureLimiter`) or in a PostgreSQL store shared by several replicas (relay/control/store/postgres-failure-limits.ts),
 * where a source's failures on every replica count against the same limit.
 */
import type { FailureLimiter, FailureLimiterOptions, LimitEntry } from './rate-limit.js';

export type FailOutcome = { limited: LimitEntry } | { counted: LimitEntry };

export interface FailureLimits {
  readonly options: FailureLimiterOptions;
  /** The entry of `key` when it is limited, else null. */
  limitOf(key: string): Promise<LimitEntry | null>;
  /** Counts a failure; returns the entry after it (`limited` turns true on the failure that reaches `max`). */
  fail(key: string): Promise<LimitEntry>;
  /**
   * limitOf, then fail when not limited, as one step: concurrent failures of a key (on any replica) see each
   * other, so exactly `max` of them are counted before the limit shows.
   */
  failUnlessLimited(key: string): Promise<FailOutcome>;
  /** Every key still counting, most recently failed last. */
  list(): Promise<LimitEntry[]>;
  /** Forgets `key`; returns what it held, or null if it was not counting. */
  clear(key: string): Promise<LimitEntry | null>;
  /** Forgets every key; returns what they held. */
  clearAll(): Promise<LimitEntry[]>;
  /** Keys being counted. */
  size(): Promise<number>;
}

/** One relay's limit, in memory. */
export function localFailureLimits(limiter: FailureLimiter): FailureLimits {
  return {
    options: limiter.options,
    limitOf: async (key) => limiter.limitOf(key),
    fail: async (key) => limiter.fail(key),
    failUnlessLimited: async (key) => {
      const limited = limiter.limitOf(key);
      return limited ? { limited } : { counted: limiter.fail(key) };
    },
    list: async () => limiter.list(),
    clear: async (key) => limiter.clear(key),
    clearAll: async () => limiter.clearAll(),
    size: async () => limiter.size,
  };
}
