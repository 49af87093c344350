/**
 * A run of datagrams read at once (a UDP GRO read: up to 64 datagrams from one sender in one system call),
 * handed up one at a time, synchronously. An ARQ session fed inside a run does not flush after each datagram:
 * it asks to be flushed once, when the run ends, so what the whole run owes (its ACKs, cumulative and
 * selective, a gap's fast-retransmit signal, the new data the ACKs let go) leaves in one flush, in as few
 * datagrams as fit, instead of one ACK datagram every `ackEvery` segments. A session fed outside a run
 * (node:dgram, the relay's WebSocket, tests) flushes at once as before.
 *
 * The reader opens the run around its loop (within()); the run's mechanics are buffers/deferred-run.ts.
 */
import { DeferredRun } from '../buffers/deferred-run.js';
import { sendRun } from '../buffers/send-run.js';

/** What a run flushes at its end. */
export interface RunFlushable {
  flushRun(): void;
}

/**
 * A run of reads (deferred-run.ts). Its flushes' datagrams leave as one send run: a peer's packets from several
 * sessions seal together. A flush that feeds or defers again flushes at once, outside the run.
 */
export class ReceiveRun extends DeferredRun<RunFlushable> {
  constructor() {
    super({ flush: (s) => s.flushRun(), around: (flushAll) => sendRun.within(flushAll) });
  }
}

/** The process's receive run: the GSO socket's reads open it, ARQ sessions defer to it. */
export const receiveRun = new ReceiveRun();
