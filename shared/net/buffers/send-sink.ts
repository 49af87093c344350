/**
 * The bottom of a send path: the one place a datagram's pooled memory (buffer-pool.ts, handDown) goes back
 * to its pool, and where the datagrams that never reach the wire are counted, by reason.
 *
 * A socket-owning layer (the DERP client's and the relay's WebSocket peers, the in-process relay client,
 * the DERP router, the direct path's UDP sockets) holds one sink and tells it, for every datagram, one of:
 * - `drop(reason, view)`: it is not sent (not connected, backed up, policy, a queue's head, a send error);
 *   counted, and its memory goes back (nothing will read it); `refuse(view)` the same, counted by the caller;
 * - `sent(view)`: the socket no longer needs these bytes (the kernel copied them in a synchronous send, or
 *   the layer copied them into a frame of its own);
 * - `completion(view)`: it goes to a writer that calls back once per write, in the order of the writes (a
 *   WebSocket, node:dgram); the callback returned is one of the sink's two, made once, never a closure per
 *   datagram. Pooled views wait in a queue, in write order, and the n-th completion gives the n-th back.
 *
 * Why the order holds: a WebSocket's writes complete in order (a stream's write callbacks); node:dgram's
 * sends complete in the order libuv queued them, and a send completes synchronously only when nothing
 * queued is left before it. A write that fails is the exception: from the first failed completion the
 * sink gives back nothing that was waiting (that memory is left to the garbage collector), so a failure
 * reported out of order never frees memory a socket still reads.
 */
import { handedDownTo, isHandedDown } from './buffer-pool.js';
import { RingQueue } from './ring-queue.js';

/** Where a sink counts what it drops. */
export interface DropCounter<R extends string> {
  drop(reason: R, bytes: number): void;
}

/** A writer's completion callback (WebSocket.send, dgram.Socket.send). */
export type WriteCompletion = (err?: Error | null) => void;

export interface SendSinkOptions<R extends string> {
  /** Counts drops by reason (the owner's stats). */
  counter: DropCounter<R>;
  /** Called after every completion the sink handed out, after the memory went back (the socket's progress). */
  onWritten?: WriteCompletion;
}

const NOTHING: WriteCompletion = () => {};

export class SendSink<R extends string> {
  readonly #counter: DropCounter<R>;
  readonly #onWritten: WriteCompletion;
  /** Pooled views handed to the writer, in write order (bounded by the owner's backpressure). */
  readonly #writing = new RingQueue<Uint8Array>({ capacity: Number.POSITIVE_INFINITY });
  /** Completions still due for views left to the garbage collector after a failed write. */
  #abandoned = 0;
  /** The completion of every write without pooled memory. */
  readonly #plain: WriteCompletion;
  /** The completion of every write of pooled memory: the oldest waiting view goes back. */
  readonly #pooled: WriteCompletion = (err) => {
    if (this.#abandoned > 0) this.#abandoned--;
    else if (err) this.#abandon();
    else {
      const view = this.#writing.shift();
      if (view !== undefined) releaseSent(view);
    }
    this.#onWritten(err);
  };

  constructor(o: SendSinkOptions<R>) {
    this.#counter = o.counter;
    this.#onWritten = o.onWritten ?? NOTHING;
    this.#plain = this.#onWritten;
  }

  /** Views handed to the writer and not completed yet. */
  get writing(): number {
    return this.#writing.length;
  }

  /** `view` is not sent: counted under `reason` (with `bytes`, by default its length); its memory goes back. */
  drop(reason: R, view: Uint8Array, bytes = view.length): false {
    this.#counter.drop(reason, bytes);
    releaseSent(view);
    return false;
  }

  /** `view` is refused (the caller hears false and counts it there): its memory goes back. */
  refuse(view: Uint8Array): false {
    releaseSent(view);
    return false;
  }

  /**
   * The socket no longer needs `view`'s bytes (sent synchronously, or copied): its memory goes back.
   * Returns whether it did (false for memory not handed down, or given back already).
   */
  sent(view: Uint8Array): boolean {
    return releaseSent(view);
  }

  /** The completion to pass to an in-order writer for `view` (one of the sink's two callbacks). */
  completion(view: Uint8Array): WriteCompletion {
    if (!isHandedDown(view)) return this.#plain;
    this.#writing.push(view);
    return this.#pooled;
  }

  /** A write failed: what waits is left to the garbage collector, and the completions due for it skipped. */
  #abandon(): void {
    const waiting = this.#writing.length;
    this.#writing.clear();
    this.#abandoned += Math.max(0, waiting - 1);
  }
}

/** Gives `view`'s memory back if a pool handed it down and it was not released yet; whether it did. */
function releaseSent(view: Uint8Array): boolean {
  return handedDownTo(view)?.give(view) ?? false;
}
