/**
 * The lease loop: renew now, then every `renewAfterSeconds` (+-10 % jitter) while renewals succeed;
 * after a failure retry with exponential backoff (1 s doubling to a 30 s cap, jittered), forever. One
 * renewal is in flight at a time; stop() cancels the pending timer and ignores a late answer.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { Backoff, jittered } from './backoff.js';
import type { LeaseResponse } from './types.js';

/** Bounds applied to the relay's renewAfterSeconds, so a bad answer cannot stall or spin the loop. */
export const MIN_RENEW_SECONDS = 1;
export const MAX_RENEW_SECONDS = 3600;
export const RENEW_JITTER = 0.1;

export interface LeaseLoopOptions {
  readonly clock: Clock;
  readonly renew: () => Promise<LeaseResponse>;
  readonly onRenewed: (res: LeaseResponse) => void;
  readonly onFailed: (err: unknown, failures: number, retryInMs: number) => void;
  readonly backoff?: Backoff;
  readonly random?: () => number;
}

export class LeaseLoop {
  readonly #opts: LeaseLoopOptions;
  readonly #backoff: Backoff;
  readonly #random: () => number;
  #timer: TimerHandle | undefined;
  #running = false;
  #inFlight = false;

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

  /** Renews at once (for example after a values or claims change), unless a renewal is in flight. */
  renewNow(): void {
    if (!this.#running || this.#inFlight) return;
    this.#opts.clock.clearTimer(this.#timer);
    void this.#tick();
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    this.#inFlight = true;
    let delay: number;
    try {
      const res = await this.#opts.renew();
      if (!this.#running) return;
      this.#backoff.reset();
      const asked = Number(res.renewAfterSeconds);
      const secs = Number.isFinite(asked)
        ? Math.min(MAX_RENEW_SECONDS, Math.max(MIN_RENEW_SECONDS, asked))
        : 60;
      delay = jittered(secs * 1000, RENEW_JITTER, this.#random);
      this.#opts.onRenewed(res);
    } catch (err) {
      if (!this.#running) return;
      delay = this.#backoff.next();
      this.#opts.onFailed(err, this.#backoff.attempts, delay);
    } finally {
      this.#inFlight = false;
    }
    if (this.#running) this.#timer = this.#opts.clock.setTimer(delay, () => void this.#tick());
  }
}
