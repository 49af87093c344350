/**
 * A run of sends that leave together: an ARQ flush (and the flushes at a receive run's end) hands its datagrams
 * down one at a time, synchronously. A sender that works better on the whole run (a WireGuard peer seals a run
 * of its packets in one native call, shared/net/wireguard/peer.ts) defers them while the run is open and sends
 * them when it ends, still inside the caller's synchronous call: nothing waits for a later turn or microtask.
 * A sender used outside a run (keepalives, handshakes, tests) sends at once as before.
 *
 * The flush opens the run around its loop (within()); runs nest (the outermost ends them). A flush that throws
 * does not keep the others from running; the first error is thrown once all have run.
 */

/** What a send run flushes at its end. */
export interface SendRunFlushable {
  flushSendRun(): void;
}

/** Senders waiting for one run's end; beyond this a sender sends at once (a bound, never reached by a flush). */
const MAX_DEFERRED = 4096;

export class SendRun {
  #depth = 0;
  readonly #deferred = new Set<SendRunFlushable>();
  /** Runs ended, and flushes done at their ends (counters for tests and benchmarks). */
  readonly stats = { runs: 0, flushes: 0 };

  /** Whether a run is open (a sender may defer its sends). */
  get open(): boolean {
    return this.#depth > 0;
  }

  /** Defers `s`'s sends to the run's end; false (send now) when no run is open or the run is full. */
  defer(s: SendRunFlushable): boolean {
    if (this.#depth === 0) return false;
    if (this.#deferred.size >= MAX_DEFERRED && !this.#deferred.has(s)) return false;
    this.#deferred.add(s);
    return true;
  }

  /** Runs `send` (which hands down the run's datagrams) as one run, then flushes what it deferred. */
  within(send: () => void): void {
    this.#depth++;
    try {
      send();
    } finally {
      this.#depth--;
      if (this.#depth === 0) this.#end();
    }
  }

  #end(): void {
    this.stats.runs++;
    let failure: unknown;
    let failed = false;
    // A flush that sends again (a synchronous path back into the sender) sends at once, outside the run.
    for (const s of this.#deferred) {
      this.#deferred.delete(s);
      this.stats.flushes++;
      try {
        s.flushSendRun();
      } catch (err) {
        if (!failed) failure = err;
        failed = true;
      }
    }
    if (failed) throw failure;
  }
}

/** The process's send run: ARQ flushes open it, WireGuard peers defer to it. */
export const sendRun = new SendRun();
