/**
 * The relay's drain (SIGTERM): from `start()` on, /readyz answers 503 so a load balancer stops sending new
 * connections, the DERP server admits no new agents, and everything else is served as before. Parts of the
 * relay report work in flight (the hub's open streams to agents); `whenIdle` resolves once none is, or at
 * its deadline. RunningRelay.drain() runs the sequence (relay/server.ts).
 */
import type { Clock } from '../shared/clock.js';

/** How often `whenIdle` looks at the in-flight counters. */
const IDLE_POLL_MS = 50;

export interface InFlightSource {
  /** What is counted, for the drain's log line (e.g. `hub streams`). */
  readonly name: string;
  count(): number;
}

export class DrainState {
  readonly #clock: Clock;
  readonly #onStart = new Set<() => void>();
  readonly #sources = new Set<InFlightSource>();
  #startedAt: number | null = null;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  get draining(): boolean {
    return this.#startedAt !== null;
  }

  /** Marks the relay draining and tells the listeners; false when it already was. */
  start(): boolean {
    if (this.#startedAt !== null) return false;
    this.#startedAt = this.#clock.now();
    for (const fn of [...this.#onStart]) fn();
    return true;
  }

  /** Called once when the drain starts; returns a function that removes the listener. */
  onStart(fn: () => void): () => void {
    this.#onStart.add(fn);
    return () => this.#onStart.delete(fn);
  }

  /** Work in flight that the drain waits for; returns a function that removes the source. */
  track(source: InFlightSource): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
  }

  /** In-flight counts by source name (only non-zero ones). */
  inFlight(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.#sources) {
      const n = s.count();
      if (n > 0) out[s.name] = (out[s.name] ?? 0) + n;
    }
    return out;
  }

  /**
   * Resolves with what was still in flight: `{}` once nothing is (looked at from `notBeforeMs` on), or the
   * counts when `timeoutMs` ran out.
   */
  whenIdle(opts: { timeoutMs: number; notBeforeMs: number }): Promise<Record<string, number>> {
    const now = this.#clock.now();
    const deadline = now + opts.timeoutMs;
    const from = now + Math.min(opts.notBeforeMs, opts.timeoutMs);
    return new Promise((resolve) => {
      const check = (): void => {
        const left = this.inFlight();
        const at = this.#clock.now();
        if (at < from) {
          this.#clock.setTimer(from - at, check);
          return;
        }
        if (Object.keys(left).length === 0 || at >= deadline) {
          resolve(left);
          return;
        }
        this.#clock.setTimer(Math.min(IDLE_POLL_MS, Math.max(1, deadline - at)), check);
      };
      check();
    });
  }
}
