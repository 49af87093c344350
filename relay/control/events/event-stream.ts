/**
 * One open GET /api/v1/events stream (text/event-stream): first the snapshot (one `cluster` event per
 * visible cluster, read from the feed as each is written, so a cluster that changes meanwhile is sent
 * once, as it is then), then `ready`, then the feed's changes in order, and a `: keepalive` comment every
 * KEEPALIVE_MS. Every event takes the next number of a relay-wide counter as its `id`, so ids increase
 * along a stream.
 *
 * Writes follow the socket's backpressure: while it does not drain, changes wait in a queue that holds one
 * entry per cluster (a later change of a queued cluster replaces it in place: a consumer that falls behind
 * gets each cluster's latest state and may miss intermediate ones). A consumer is dropped (the stream is cut,
 * counted as `slow`) when that queue holds over `maxQueuedBytes` and its socket has not drained for
 * SLOW_GRACE_MS (a burst a reading consumer catches up with is not held against it), at once when the queue
 * passes twice that, and when its socket has not drained for STALL_MS whatever the queue: so a stream holds at
 * most 2 x `maxQueuedBytes` of changes and never slows the others.
 * A stream the relay ends for another reason (key revoked or expired, relay closing) first gets an
 * `end` event with the error envelope's `{code, message}`.
 */
import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../../../shared/clock.js';
import type { TunnelError } from '../../../shared/errors.js';
import type { FeedMessage, FeedSubscriber } from './cluster-feed.js';

export const KEEPALIVE_MS = 15_000;
/** A stream whose socket has not drained for this long is dropped (its consumer stopped reading). */
export const STALL_MS = 60_000;
/** A queue over `maxQueuedBytes` is tolerated while the socket last drained less than this long ago. */
export const SLOW_GRACE_MS = 5_000;

export type StreamEndReason = 'revoked' | 'expired' | 'closing' | 'slow' | 'client';

/** What a stream reads the snapshot from. */
export interface SnapshotSource {
  names(visible: (group: string) => boolean): string[];
  viewOf(name: string): string | undefined;
}

export interface EventStreamOptions {
  res: ServerResponse;
  feed: SnapshotSource;
  /** Send the snapshot first (default); false: `ready` at once, then changes only (`?snapshot=false`). */
  snapshot?: boolean;
  /** Whether the caller may see clusters of `group`. */
  visible(group: string): boolean;
  clock: Clock;
  maxQueuedBytes: number;
  /** The next event id (relay-wide, increasing). */
  nextId(): number;
  /** Called once when the stream ends, for whatever reason. */
  onEnd(reason: StreamEndReason): void;
}

export class EventStream implements FeedSubscriber {
  readonly #opts: EventStreamOptions;
  /** Snapshot clusters not written yet (a Set: a change of one of them is left to the snapshot). */
  readonly #snapshot: Set<string>;
  #readySent = false;
  /** Cluster name -> the event waiting to be written for it. */
  readonly #queue = new Map<string, string>();
  #queuedBytes = 0;
  /** Monotonic ms since the socket stopped taking writes; null while it takes them. */
  #blockedSince: number | null = null;
  #keepalive: TimerHandle | undefined;
  #ended = false;

  constructor(opts: EventStreamOptions) {
    this.#opts = opts;
    this.#snapshot = new Set(opts.snapshot === false ? [] : opts.feed.names(opts.visible));
    opts.res.once('close', () => this.#finish('client'));
  }

  /** Sends the headers and starts writing the snapshot. */
  start(): void {
    const { res } = this.#opts;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    this.#armKeepalive();
    this.#pump();
  }

  deliver(message: FeedMessage): void {
    if (this.#ended || !this.#opts.visible(message.group)) return;
    if (this.#snapshot.has(message.name)) {
      // Not written yet: the snapshot writes its state as it is then, or skips it once it is gone.
      return;
    }
    const body = `event: ${message.kind}\ndata: ${message.json}\n\n`;
    const replaced = this.#queue.get(message.name);
    const bytes = this.#queuedBytes + Buffer.byteLength(body) - (replaced ? Buffer.byteLength(replaced) : 0);
    if (
      bytes > 2 * this.#opts.maxQueuedBytes ||
      (bytes > this.#opts.maxQueuedBytes && this.#blockedFor(SLOW_GRACE_MS))
    ) {
      this.#drop();
      return;
    }
    this.#queue.set(message.name, body);
    this.#queuedBytes = bytes;
    if (this.#blockedSince === null) this.#pump();
  }

  /** Ends the stream with an `end` event carrying `why` (key revoked or expired, relay closing). */
  end(reason: Exclude<StreamEndReason, 'slow' | 'client'>, why: TunnelError): void {
    if (this.#ended) return;
    const { res } = this.#opts;
    res.end(this.#frame(`event: end\ndata: ${JSON.stringify(why.toJSON().error)}\n\n`));
    this.#finish(reason);
  }

  /** Writes while the socket takes writes: the snapshot, then `ready`, then queued changes. */
  #pump(): void {
    while (!this.#ended && this.#blockedSince === null) {
      const body = this.#nextBody();
      if (body === null) return;
      if (!this.#opts.res.write(this.#frame(body))) {
        this.#blockedSince = this.#opts.clock.now();
        this.#opts.res.once('drain', () => {
          this.#blockedSince = null;
          this.#pump();
        });
      }
    }
  }

  #nextBody(): string | null {
    for (const name of this.#snapshot) {
      this.#snapshot.delete(name);
      const json = this.#opts.feed.viewOf(name);
      if (json !== undefined) return `event: cluster\ndata: ${json}\n\n`;
    }
    if (!this.#readySent) {
      this.#readySent = true;
      return 'event: ready\ndata: {}\n\n';
    }
    for (const [name, body] of this.#queue) {
      this.#queue.delete(name);
      this.#queuedBytes -= Buffer.byteLength(body);
      return body;
    }
    return null;
  }

  #frame(body: string): string {
    return `id: ${this.#opts.nextId()}\n${body}`;
  }

  #armKeepalive(): void {
    this.#keepalive = this.#opts.clock.setTimer(KEEPALIVE_MS, () => {
      if (this.#ended) return;
      if (this.#blockedSince === null) this.#opts.res.write(': keepalive\n\n');
      else if (
        this.#blockedFor(STALL_MS) ||
        (this.#queuedBytes > this.#opts.maxQueuedBytes && this.#blockedFor(SLOW_GRACE_MS))
      ) {
        this.#drop();
        return;
      }
      this.#armKeepalive();
    });
  }

  /** The socket has taken no write for at least `ms`. */
  #blockedFor(ms: number): boolean {
    return this.#blockedSince !== null && this.#opts.clock.now() - this.#blockedSince >= ms;
  }

  #drop(): void {
    if (this.#ended) return;
    this.#opts.res.destroy();
    this.#finish('slow');
  }

  #finish(reason: StreamEndReason): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#opts.clock.clearTimer(this.#keepalive);
    this.#queue.clear();
    this.#queuedBytes = 0;
    this.#snapshot.clear();
    this.#opts.onEnd(reason);
  }
}
