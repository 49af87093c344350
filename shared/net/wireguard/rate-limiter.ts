/**
 * Per-source token bucket for handshakes under load (wireguard-go ratelimiter: 20/s, burst 5).
 * At most RATE_LIMIT_MAX_SOURCES sources are tracked; the oldest entry is evicted past that.
 */
import type { Clock } from '../../clock.js';
import { RATE_LIMIT_BURST, RATE_LIMIT_MAX_SOURCES, RATE_LIMIT_PER_SECOND } from './constants.js';

export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly perSecond = RATE_LIMIT_PER_SECOND,
    private readonly burst = RATE_LIMIT_BURST,
    private readonly maxSources = RATE_LIMIT_MAX_SOURCES,
  ) {}

  allow(source: string): boolean {
    const now = this.clock.now();
    let b = this.#buckets.get(source);
    if (!b) {
      if (this.#buckets.size >= this.maxSources) {
        const oldest = this.#buckets.keys().next();
        if (!oldest.done) this.#buckets.delete(oldest.value);
      }
      b = { tokens: this.burst, at: now };
      this.#buckets.set(source, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  get size(): number {
    return this.#buckets.size;
  }
}
