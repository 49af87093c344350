/**
 * Retry delays: exponential from 1 s, doubling, capped at 30 s, with +-20 % jitter so a fleet of agents
 * that lost the relay at the same moment does not come back in lockstep. The cap holds after jitter.
 */
export interface BackoffOptions {
  readonly baseMs?: number;
  readonly factor?: number;
  readonly capMs?: number;
  /** Fraction of the delay added or removed at random, 0..1. */
  readonly jitter?: number;
  /** Source of randomness in [0, 1); injected by tests. */
  readonly random?: () => number;
}

export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_CAP_MS = 30_000;

export class Backoff {
  readonly #base: number;
  readonly #factor: number;
  readonly #cap: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(opts: BackoffOptions = {}) {
    this.#base = opts.baseMs ?? BACKOFF_BASE_MS;
    this.#factor = opts.factor ?? 2;
    this.#cap = opts.capMs ?? BACKOFF_CAP_MS;
    this.#jitter = opts.jitter ?? 0.2;
    this.#random = opts.random ?? Math.random;
  }

  /** Failures since the last reset. */
  get attempts(): number {
    return this.#attempt;
  }

  /** The delay before the next retry; each call counts one more failure. */
  next(): number {
    const exp = Math.min(this.#cap, this.#base * this.#factor ** Math.min(this.#attempt, 40));
    this.#attempt++;
    return Math.min(this.#cap, jittered(exp, this.#jitter, this.#random));
  }

  reset(): void {
    this.#attempt = 0;
  }
}

/** `ms` moved by up to +-fraction at random, rounded to whole milliseconds. */
export function jittered(ms: number, fraction: number, random: () => number = Math.random): number {
  const f = Math.min(1, Math.max(0, fraction));
  return Math.round(ms * (1 - f + 2 * f * random()));
}
