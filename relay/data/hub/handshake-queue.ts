import { RingQueue } from '../../../shared/net/buffers/ring-queue.js';

/**
 * A bounded FIFO of WireGuard handshake messages, drained a few per turn of the event loop (the
 * handshake queue of wireguard-go). A handshake initiation costs the hub several X25519 operations
 * (~0.3-1 ms on the target machine); processing a burst of them inside the I/O callback that delivered
 * it stalls everything else on the loop (/healthz, live sessions' packets) for the whole burst. Queued,
 * at most `batch` run per turn (through the injected `defer`, setImmediate by default), so timers and
 * other sockets' I/O run between batches. When `cap` items wait, new ones are refused (the caller counts
 * the drop): WireGuard initiators retry after REKEY_TIMEOUT (5 s), so a drop delays a session, never
 * breaks it.
 */

/**
 * Handshake messages processed per deferred turn: 32 initiations are ~5-15 ms of X25519 work. One batch
 * runs per event-loop iteration, so while TLS handshakes make iterations long the batch also bounds the
 * hub's handshake rate (32 per iteration); smaller batches made agents time out and retry in the storm.
 */
export const HANDSHAKE_BATCH = 32;
/** Handshake messages waiting at most (4,096 x ~150 bytes ~ 0.6 MiB; ~2-4 s of work at the hub's rate). */
export const HANDSHAKE_QUEUE_CAP = 4_096;

/** Runs `fn` later, after pending I/O (setImmediate, or a test's own scheduler). */
export type Defer = (fn: () => void) => void;

const defaultDefer: Defer = (fn) => void setImmediate(fn);

export interface HandshakeQueueOptions<T> {
  /** Processes one item. Must not throw (an exception is swallowed and counted in `stats.errors`). */
  handle(item: T): void;
  defer?: Defer;
  batch?: number;
  cap?: number;
}

export interface HandshakeQueueStats {
  /** Items waiting now. */
  depth: number;
  /** Most items that waited at once. */
  maxDepth: number;
  /** Deferred turns that ran (each handles at most `batch` items). */
  turns: number;
  handled: number;
  /** Items refused because `cap` items were waiting. */
  refused: number;
  errors: number;
}

export class HandshakeQueue<T> {
  readonly #handle: (item: T) => void;
  readonly #defer: Defer;
  readonly batch: number;
  readonly cap: number;
  readonly #items: RingQueue<T>;
  #scheduled = false;
  #closed = false;
  readonly #stats = { maxDepth: 0, turns: 0, handled: 0, refused: 0, errors: 0 };

  constructor(opts: HandshakeQueueOptions<T>) {
    this.#handle = opts.handle;
    this.#defer = opts.defer ?? defaultDefer;
    this.batch = Math.max(1, Math.floor(opts.batch ?? HANDSHAKE_BATCH));
    this.cap = Math.max(1, Math.floor(opts.cap ?? HANDSHAKE_QUEUE_CAP));
    this.#items = new RingQueue<T>({ capacity: this.cap });
  }

  get depth(): number {
    return this.#items.length;
  }

  get stats(): HandshakeQueueStats {
    return { depth: this.depth, ...this.#stats };
  }

  /** Queues an item; false (nothing kept) when `cap` items wait or the queue is closed. */
  push(item: T): boolean {
    if (this.#closed) return false;
    if (!this.#items.push(item)) {
      this.#stats.refused++;
      return false;
    }
    if (this.depth > this.#stats.maxDepth) this.#stats.maxDepth = this.depth;
    this.#schedule();
    return true;
  }

  /** Drops everything waiting and refuses new items. */
  close(): void {
    this.#closed = true;
    this.#items.clear();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#defer(() => this.#drain());
  }

  #drain(): void {
    this.#scheduled = false;
    if (this.#closed) return;
    this.#stats.turns++;
    for (let i = 0; i < this.batch; i++) {
      const item = this.#items.shift();
      if (item === undefined) break;
      this.#stats.handled++;
      try {
        this.#handle(item);
      } catch {
        this.#stats.errors++;
      }
      if (this.#closed) return;
    }
    if (this.depth > 0) this.#schedule();
  }
}
