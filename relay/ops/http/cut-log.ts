/**
 * Log lines for connections the relay cuts, without flooding: the first cut after a quiet window is logged at
 * once; further cuts are counted (by reason and by source) and summed up in one line when the window ends, and
 * a window with cuts opens the next one, so a sustained attack costs one line per window. Idle keep-alive
 * closes are normal operation: they are counted on /metrics but not logged (the guard does not record them here).
 */
import type { Clock, TimerHandle } from '../../../shared/clock.js';

export const CUT_REASONS = [
  'header_timeout',
  'body_timeout',
  'idle_timeout',
  'tls_handshake_timeout',
  'malformed',
  'source_cap',
  'total_cap',
  'evicted',
] as const;
export type CutReason = (typeof CUT_REASONS)[number];

/** A zero count for every reason. */
export function zeroCutCounts(): Record<CutReason, number> {
  return {
    header_timeout: 0,
    body_timeout: 0,
    idle_timeout: 0,
    tls_handshake_timeout: 0,
    malformed: 0,
    source_cap: 0,
    total_cap: 0,
    evicted: 0,
  };
}

/** Window of the summary line. */
export const CUT_LOG_WINDOW_MS = 60_000;
/** Distinct sources counted per window; further sources are summed under `other`. */
export const CUT_LOG_MAX_SOURCES = 1_024;
/** Sources named in a summary line (the ones with the most cuts). */
export const CUT_LOG_TOP_SOURCES = 5;

export interface CutLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface CutLogOptions {
  log: CutLogger;
  clock: Clock;
  windowMs?: number;
}

export class CutLog {
  readonly #log: CutLogger;
  readonly #clock: Clock;
  readonly #windowMs: number;
  #timer: TimerHandle | undefined;
  #byReason = new Map<CutReason, number>();
  #bySource = new Map<string, number>();

  constructor(opts: CutLogOptions) {
    this.#log = opts.log;
    this.#clock = opts.clock;
    this.#windowMs = opts.windowMs ?? CUT_LOG_WINDOW_MS;
  }

  record(reason: CutReason, source: string | null): void {
    if (this.#timer === undefined) {
      this.#log.warn({ reason, source }, `HTTP connection cut: ${reason}`);
      this.#openWindow();
      return;
    }
    this.#byReason.set(reason, (this.#byReason.get(reason) ?? 0) + 1);
    const key =
      source !== null && (this.#bySource.has(source) || this.#bySource.size < CUT_LOG_MAX_SOURCES)
        ? source
        : 'other';
    this.#bySource.set(key, (this.#bySource.get(key) ?? 0) + 1);
  }

  close(): void {
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  #openWindow(): void {
    this.#timer = this.#clock.setTimer(this.#windowMs, () => this.#endWindow());
  }

  #endWindow(): void {
    this.#timer = undefined;
    if (this.#byReason.size === 0) return;
    const cut = Object.fromEntries(this.#byReason);
    const topSources = [...this.#bySource]
      .sort((a, b) => b[1] - a[1])
      .slice(0, CUT_LOG_TOP_SOURCES)
      .map(([source, count]) => ({ source, count }));
    this.#log.warn(
      { cut, sources: this.#bySource.size, topSources, windowSeconds: this.#windowMs / 1000 },
      'HTTP connections cut since the last line',
    );
    this.#byReason = new Map();
    this.#bySource = new Map();
    this.#openWindow();
  }
}
