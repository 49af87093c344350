/**
 * Reconnect delays for the relay client: exponential with jitter, with a floor and a cap. Attempt n (1-based) waits a
 * uniformly random time in [e/2, e] where e = min(maxMs, baseMs * 2^(n-1)), and never less than RECONNECT_FLOOR_MS
 * whatever else (a Restarting frame's window) shortened it. Defaults: 500 ms base, 30 s cap, so the waits grow
 * 0.25-0.5 s, 0.5-1 s, 1-2 s, ... and stay at 15-30 s from attempt 8 on. A connection counts as a success (the
 * count starts over) only once it has stayed up STABLE_CONNECTION_MS: a relay that accepts and drops at once is
 * backed off from like one that refuses.
 */
export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 30_000 };
/** No reconnect attempt follows the previous one sooner than this. */
export const RECONNECT_FLOOR_MS = 100;
/**
 * A connection up this long resets the attempt count; one that ends sooner keeps counting. One second tells a
 * relay that accepts and drops at once (backed off) from a replica that served and then died (its agents move
 * to the next replica at once, however many died in turn: kill -9 of each replica, test/replicas-drain.test.ts).
 */
export const STABLE_CONNECTION_MS = 1_000;

export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number): number {
  const n = Math.max(1, Math.min(attempt, 40));
  const e = Math.min(opts.maxMs, opts.baseMs * 2 ** (n - 1));
  return Math.round(e / 2 + random() * (e / 2));
}
