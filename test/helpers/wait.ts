/**
 * Waiting in tests: every wait is bounded and names what it waited for when it gives up.
 */

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `predicate` every `intervalMs` until it returns true; rejects with a message naming `what` after
 * `timeoutMs`. A predicate that throws is "not yet", and its last error is in the timeout message.
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
  intervalMs = 10,
): Promise<void> {
  await pollUntil({ what, read: predicate, until: (ok) => ok, timeoutMs, intervalMs });
}

export interface PollOptions<T> {
  /** Named in the timeout error. */
  what: string;
  /** Reads the current value; a throw counts as "not yet". */
  read: () => T | Promise<T>;
  until: (value: T) => boolean;
  timeoutMs: number;
  intervalMs?: number;
  /** Asked after each value `until` refused: a message ends the wait at once with that error (say, a process exited). */
  abort?: () => string | undefined;
}

/**
 * Reads a value until `until` accepts it; resolves with that value and the time it took. On timeout the
 * error names `what` and shows the last value read (or the last error).
 */
export function pollUntil<T, U extends T>(
  opts: PollOptions<T> & { until: (value: T) => value is U },
): Promise<{ value: U; elapsedMs: number }>;
export function pollUntil<T>(opts: PollOptions<T>): Promise<{ value: T; elapsedMs: number }>;
export async function pollUntil<T>(opts: PollOptions<T>): Promise<{ value: T; elapsedMs: number }> {
  const start = Date.now();
  const intervalMs = opts.intervalMs ?? 50;
  let last = 'nothing read';
  for (;;) {
    try {
      const value = await opts.read();
      if (opts.until(value)) return { value, elapsedMs: Date.now() - start };
      last = `last value: ${JSON.stringify(value)?.slice(0, 1500)}`;
    } catch (err) {
      last = `last error: ${err instanceof Error ? err.message : String(err)}`;
    }
    const aborted = opts.abort?.();
    if (aborted !== undefined) throw new Error(aborted);
    if (Date.now() - start >= opts.timeoutMs) {
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what} (${last})`);
    }
    await sleep(intervalMs);
  }
}
