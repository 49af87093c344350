/**
 * A run of datagrams read at once (a UDP GRO read: up to 64 datagrams from one sender in one system call),
 * handed up one at a time, synchronously. An ARQ session fed inside a run does not flush after each datagram:
 * it asks to be flushed once, when the run ends, so what the whole run owes (its ACKs, cumulative and
 * selective, a gap's fast-retransmit signal, the new data the ACKs let go) leaves in one flush, in as few
 * datagrams as fit, instead of one ACK datagram every `ackEvery` segments. A session fed outside a run
 * (node:dgram, the relay's WebSocket, tests) flushes at once as before.
 *
 * The reader opens the run around its loop (within()); runs nest (the outermost ends them). A flush that
 * throws does not keep the others from running; the first error is thrown once all have run.
 */
import { sendRun } from '../buffers/send-run.js';

/** What a run flushes at its end. */
export interface RunFlushable {
  flushRun(): void;
}

/** Sessions waiting for one run's end; beyond this a session flushes at once (a bound, never reached by a GRO read). */
const MAX_DEFERRED = 4096;

export class ReceiveRun {
  #depth = 0;
  readonly #deferred = new Set<RunFlushable>();
  /** Runs ended, and flushes done at their ends (counters for tests and benchmarks). */
  readonly stats = { runs: 0, flushes: 0 };

  /** Whether a run is open (a session fed now may defer its flush). */
  get open(): boolean {
    return this.#depth > 0;
  }

  /** Defers `s`'s flush to the run's end; false (flush now) when no run is open or the run is full. */
  defer(s: RunFlushable): boolean {
    if (this.#depth === 0) return false;
    if (this.#deferred.size >= MAX_DEFERRED && !this.#deferred.has(s)) return false;
    this.#deferred.add(s);
    return true;
  }

  /** Runs `read` (which hands up the run's datagrams) as one run, then flushes what it deferred. */
  within(read: () => void): void {
    this.#depth++;
    try {
      read();
    } finally {
      this.#depth--;
      if (this.#depth === 0) this.#end();
    }
  }

  #end(): void {
    this.stats.runs++;
    // The flushes' datagrams leave as one send run: a peer's packets from several sessions seal together.
    sendRun.within(() => this.#flushDeferred());
  }

  #flushDeferred(): void {
    let failure: unknown;
    let failed = false;
    // A flush may feed or defer again (a synchronous path back into input()): it flushes at once, outside the run.
    for (const s of this.#deferred) {
      this.#deferred.delete(s);
      this.stats.flushes++;
      try {
        s.flushRun();
      } catch (err) {
        if (!failed) failure = err;
        failed = true;
      }
    }
    if (failed) throw failure;
  }
}

/** The process's receive run: the GSO socket's reads open it, ARQ sessions defer to it. */
export const receiveRun = new ReceiveRun();
