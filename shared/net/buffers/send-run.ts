/**
 * A run of sends that leave together: an ARQ flush (and the flushes at a receive run's end) hands its datagrams
 * down one at a time, synchronously. A sender that works better on the whole run (a WireGuard peer seals a run
 * of its packets in one native call, shared/net/wireguard/peer.ts) defers them while the run is open and sends
 * them when it ends, still inside the caller's synchronous call: nothing waits for a later turn or microtask.
 * A sender used outside a run (keepalives, handshakes, tests) sends at once as before.
 *
 * The flush opens the run around its loop (within()); the run's mechanics are deferred-run.ts.
 */

import { DeferredRun } from './deferred-run.js';

/** What a send run flushes at its end. */
export interface SendRunFlushable {
  flushSendRun(): void;
}

/** A run of sends (deferred-run.ts); a flush that sends again sends at once, outside the run. */
export class SendRun extends DeferredRun<SendRunFlushable> {
  constructor() {
    super({ flush: (s) => s.flushSendRun() });
  }
}

/** The process's send run: ARQ flushes open it, WireGuard peers defer to it. */
export const sendRun = new SendRun();
