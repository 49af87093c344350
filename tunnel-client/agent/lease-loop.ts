/**
 * The lease loop: renew now, then every `renewAfterSeconds` (+-10 % jitter) while renewals succeed;
 * after a failure retry with exponential backoff (1 s doubling to a 30 s cap, jittered), forever. One
 * renewal is in flight at a time; stop() cancels the pending timer and ignores a late answer. renewNow()
 * renews early (what the agent reports changed), at most once per EARLY_RENEW_GAP_MS; when that time comes,
 * `earlyStillDue` may call it off (the change went away meanwhile) and the regular time stands.
 */
import type { LeaseReply } from '../../shared/api/lease.js';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { Backoff, jittered } from './backoff.js';

/** Bounds applied to the relay's renewAfterSeconds, so a bad answer cannot stall or spin the loop. */
export const MIN_RENEW_SECONDS = 1;
export const MAX_RENEW_SECONDS = 3600;
export const RENEW_JITTER = 0.1;
/** An early renewal (renewNow) starts at least this long after the last renewal started. */
export const EARLY_RENEW_GAP_MS = 5_000;

export interface LeaseLoopOptions {
  readonly clock: Clock;
  readonly renew: () => Promise<LeaseReply>;
  readonly onRenewed: (res: LeaseReply) => void;
  readonly onFailed: (err: unknown, failures: number, retryInMs: number) => void;
  readonly backoff?: Backoff;
  readonly random?: () => number;
  /** Asked when an early renewal's time comes: false calls it off. Absent: always renew. */
  readonly earlyStillDue?: () => boolean;
}

export class LeaseLoop {
  readonly #opts: LeaseLoopOptions;
  readonly #backoff: Backoff;
  readonly #random: () => number;
  #timer: TimerHandle | undefined;
  /** When the pending timer fires (monotonic ms). */
  #dueAt = Number.POSITIVE_INFINITY;
  /** When the renewal after the last one is due by the regular schedule (monotonic ms). */
  #regularAt = Number.POSITIVE_INFINITY;
  /** The pending timer is an early renewal (renewNow). */
  #early = false;
  /** When the last renewal started (monotonic ms). */
  #startedAt = Number.NEGATIVE_INFINITY;
  #running = false;
  #inFlight = false;
  /** renewNow() was called while a renewal was in flight: renew early again after it. */
  #again = false;

  constructor(opts: LeaseLoopOptions) {
    this.#opts = opts;
    this.#random = opts.random ?? Math.random;
    this.#backoff = opts.backoff ?? new Backoff({ random: this.#random });
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#tick();
  }

  stop(): void {
    this.#running = false;
    this.#opts.clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Renews early, as what the renewal carries changed: at once if the last renewal started EARLY_RENEW_GAP_MS
   * ago, else when it is that old; after the one in flight if there is one. Not while retrying after a failure
   * (the retry carries the change).
   */
  renewNow(): void {
    if (!this.#running) return;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    if (this.#backoff.attempts > 0) return;
    const delay = this.#earlyDelay();
    if (this.#opts.clock.now() + delay < this.#dueAt) this.#schedule(delay, { early: true });
  }

  #earlyDelay(): number {
    return Math.max(0, this.#startedAt + EARLY_RENEW_GAP_MS - this.#opts.clock.now());
  }

  #schedule(delay: number, how: { early: boolean }): void {
    this.#opts.clock.clearTimer(this.#timer);
    this.#dueAt = this.#opts.clock.now() + delay;
    this.#early = how.early;
    this.#timer = this.#opts.clock.setTimer(delay, () => this.#onTimer());
  }

  #onTimer(): void {
    if (this.#early && this.#opts.earlyStillDue?.() === false) {
      this.#schedule(Math.max(0, this.#regularAt - this.#opts.clock.now()), { early: false });
      return;
    }
    void this.#tick();
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    this.#dueAt = Number.POSITIVE_INFINITY;
    this.#startedAt = this.#opts.clock.now();
    this.#inFlight = true;
    this.#again = false;
    let delay: number;
    let early = false;
    try {
      const res = await this.#opts.renew();
      if (!this.#running) return;
      this.#backoff.reset();
      const asked = Number(res.renewAfterSeconds);
      const secs = Number.isFinite(asked)
        ? Math.min(MAX_RENEW_SECONDS, Math.max(MIN_RENEW_SECONDS, asked))
        : 60;
      delay = jittered(secs * 1000, RENEW_JITTER, this.#random);
      this.#regularAt = this.#opts.clock.now() + delay;
      this.#opts.onRenewed(res);
      if (this.#again && this.#earlyDelay() < delay) {
        delay = this.#earlyDelay();
        early = true;
      }
    } catch (err) {
      if (!this.#running) return;
      delay = this.#backoff.next();
      this.#regularAt = this.#opts.clock.now() + delay;
      this.#opts.onFailed(err, this.#backoff.attempts, delay);
    } finally {
      this.#inFlight = false;
    }
    if (this.#running) this.#schedule(delay, { early });
  }
}
