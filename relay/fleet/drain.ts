/**
 * The relay's drain (SIGTERM), in the order RunningRelay.drain() runs it (relay/start/server.ts):
 * 1. `start()`: /readyz answers 503 so a load balancer stops sending new connections, the DERP server admits no
 *    new agents, and everything else is served as before.
 * 2. `whenIdle`: the parts of the relay that report work in flight (the hub's open streams to agents) have none,
 *    or the deadline came.
 * 3. `moveAgents()`: the listeners move the agents away (the mesh forgets them here, the DERP server sends them
 *    the Restarting frame); requests keep being served, reaching the agents wherever they land.
 * 4. `whenQuiet`: no request other than a health check has arrived for a while (the balancer stopped sending),
 *    or the deadline came; then the relay closes.
 */
import type { Clock } from '../../shared/clock.js';

/** How often `whenIdle` and `whenQuiet` look. */
const POLL_MS = 50;

export interface InFlightSource {
  /** What is counted, for the drain's log line (e.g. `hub streams`). */
  readonly name: string;
  count(): number;
}

export class DrainState {
  readonly #clock: Clock;
  readonly #onStart = new Set<() => void>();
  readonly #onMove = new Set<() => Promise<void> | void>();
  readonly #sources = new Set<InFlightSource>();
  #startedAt: number | null = null;
  #lastActivity: number;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#lastActivity = clock.now();
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

  /** Called by moveAgents(), in the order added; returns a function that removes the listener. */
  onMove(fn: () => Promise<void> | void): () => void {
    this.#onMove.add(fn);
    return () => this.#onMove.delete(fn);
  }

  /** Runs the move listeners one after another. */
  async moveAgents(): Promise<void> {
    for (const fn of [...this.#onMove]) await fn();
  }

  /** Work in flight that the drain waits for; returns a function that removes the source. */
  track(source: InFlightSource): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
  }

  /** A request (not a health check) arrived. */
  noteActivity(): void {
    this.#lastActivity = this.#clock.now();
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
    const from = now + Math.min(opts.notBeforeMs, opts.timeoutMs);
    return this.#poll(now + opts.timeoutMs, (at) => {
      if (at < from) return null;
      const left = this.inFlight();
      return Object.keys(left).length === 0 ? left : null;
    }).then((r) => r ?? this.inFlight());
  }

  /** Resolves true once no activity was noted for `quietMs`, false when `timeoutMs` ran out first. */
  whenQuiet(opts: { quietMs: number; timeoutMs: number }): Promise<boolean> {
    const now = this.#clock.now();
    const since = Math.max(this.#lastActivity, now);
    return this.#poll(now + opts.timeoutMs, (at) =>
      at - Math.max(this.#lastActivity, since) >= opts.quietMs ? true : null,
    ).then((r) => r ?? false);
  }

  /** Calls `done` every POLL_MS until it returns non-null or `deadline` passes (then resolves null). */
  #poll<T>(deadline: number, done: (at: number) => T | null): Promise<T | null> {
    return new Promise((resolve) => {
      const check = (): void => {
        const at = this.#clock.now();
        const result = done(at);
        if (result !== null || at >= deadline) {
          resolve(result);
          return;
        }
        this.#clock.setTimer(Math.min(POLL_MS, Math.max(1, deadline - at)), check);
      };
      check();
    });
  }
}
