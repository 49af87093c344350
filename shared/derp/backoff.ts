/**
 * Reconnect delays for the relay client: exponential with jitter, capped. Attempt n (1-based) waits a
 * uniformly random time in [e/2, e] where e = min(maxMs, baseMs * 2^(n-1)). Defaults: 500 ms base,
 * 30 s cap, so the waits grow 0.25-0.5 s, 0.5-1 s, 1-2 s, ... and stay at 15-30 s from attempt 8 on.
 */
export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 30_000 };

export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number): number {
  const n = Math.max(1, Math.min(attempt, 40));
  const e = Math.min(opts.maxMs, opts.baseMs * 2 ** (n - 1));
  return Math.round(e / 2 + random() * (e / 2));
}
