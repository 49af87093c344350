/**
 * A run of synchronous work during which members defer something to the run's end (send-run.ts: a peer's
 * sends; arq/receive-run.ts: a session's flush). The caller opens the run around its loop (within()); runs nest
 * (the outermost ends them). At the end each deferred member is flushed once, in the order it first deferred; a
 * flush that throws does not keep the others from running, and the first error is thrown once all have run. A
 * member that defers again during the flushes is flushed at once by its own code (the run is closed by then).
 */

/** Members waiting for one run's end; beyond this a member acts at once (a bound, never reached in practice). */
const MAX_DEFERRED = 4096;

export interface DeferredRunOptions<T> {
  /** What a deferred member does at the run's end. */
  flush(member: T): void;
  /** Wraps the end's flushes (a receive run's flushes leave as one send run); absent: they run as they are. */
  around?(flushAll: () => void): void;
}

export class DeferredRun<T> {
  readonly #options: DeferredRunOptions<T>;
  #depth = 0;
  readonly #deferred = new Set<T>();
  /** Runs ended, and flushes done at their ends (counters for tests and benchmarks). */
  readonly stats = { runs: 0, flushes: 0 };

  constructor(o: DeferredRunOptions<T>) {
    this.#options = o;
  }

  /** Whether a run is open (a member may defer). */
  get open(): boolean {
    return this.#depth > 0;
  }

  /** Defers `member` to the run's end; false (act now) when no run is open or the run is full. */
  defer(member: T): boolean {
    if (this.#depth === 0) return false;
    if (this.#deferred.size >= MAX_DEFERRED && !this.#deferred.has(member)) return false;
    this.#deferred.add(member);
    return true;
  }

  /** Runs `body` as one run, then flushes what was deferred during it. */
  within(body: () => void): void {
    this.#depth++;
    try {
      body();
    } finally {
      this.#depth--;
      if (this.#depth === 0) this.#end();
    }
  }

  #end(): void {
    this.stats.runs++;
    const around = this.#options.around;
    if (around) around(() => this.#flushAll());
    else this.#flushAll();
  }

  #flushAll(): void {
    let failure: unknown;
    let failed = false;
    for (const member of this.#deferred) {
      this.#deferred.delete(member);
      this.stats.flushes++;
      try {
        this.#options.flush(member);
      } catch (err) {
        if (!failed) failure = err;
        failed = true;
      }
    }
    if (failed) throw failure;
  }
}
