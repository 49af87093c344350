/**
 * A token bucket on the injected clock: at most `burst` tokens, one more every `intervalMs`, full at the start.
 * take() spends one when there is one; nextAt() says when the next one is there. Over any span of T ms it lets
 * at most burst + T / intervalMs takes through.
 */
import type { Clock } from './clock.js';
import { TunnelError } from './errors.js';

export interface TokenBucketOptions {
  readonly clock: Clock;
  /** Most tokens held (what a burst may spend at once); an integer >= 1. */
  readonly burst: number;
  /** One token is added every this many ms; > 0. */
  readonly intervalMs: number;
}

export class TokenBucket {
  readonly #clock: Clock;
  readonly #burst: number;
  readonly #intervalMs: number;
  #tokens: number;
  #at: number;

  /** Throws BAD_CONFIG naming the value when burst or intervalMs is out of range. */
  constructor(o: TokenBucketOptions) {
    if (!Number.isInteger(o.burst) || o.burst < 1)
      throw new TunnelError('BAD_CONFIG', `token bucket burst ${o.burst}: expected an integer >= 1`);
    if (!Number.isFinite(o.intervalMs) || o.intervalMs <= 0)
      throw new TunnelError('BAD_CONFIG', `token bucket interval ${o.intervalMs} ms: expected a number > 0`);
    this.#clock = o.clock;
    this.#burst = o.burst;
    this.#intervalMs = o.intervalMs;
    this.#tokens = o.burst;
    this.#at = o.clock.now();
  }

  /** Whole tokens available now. */
  get tokens(): number {
    this.#refill();
    return Math.floor(this.#tokens);
  }

  /** Spends a token: false (nothing spent) when there is none. */
  take(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** When (clock ms) a token is there: now when one is. */
  nextAt(): number {
    this.#refill();
    if (this.#tokens >= 1) return this.#at;
    return this.#at + Math.ceil((1 - this.#tokens) * this.#intervalMs);
  }

  #refill(): void {
    const now = this.#clock.now();
    if (now <= this.#at) return;
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) / this.#intervalMs);
    this.#at = now;
  }
}
