/**
 * The open event streams of a relay and their caps: at most `maxStreams` in all (503 AT_CAPACITY beyond) and
 * `maxStreamsPerKey` per access key (429 LIMIT_EXCEEDED beyond). Each stream is held in the LivePipes registry
 * under its key, so a key revoked (on any replica sharing the store) or expired ends its streams within a
 * second with an `end` event, as it ends live proxy connections.
 */
import type { ServerResponse } from 'node:http';
import { TunnelError } from '../../../shared/errors.js';
import type { RelayContext } from '../../context/context.js';
import { LivePipes } from '../api/live-pipes.js';
import type { KeyPrincipal } from '../model/auth.js';
import type { ClusterFeed } from './cluster-feed.js';
import { EventStream, type StreamEndReason } from './event-stream.js';
import { type EventsStats, newEventsStats } from './events-metrics.js';

export interface StreamLimits {
  maxStreams: number;
  maxStreamsPerKey: number;
  /** Changes waiting for one stream's socket to drain, in bytes. */
  maxQueuedBytes: number;
}

interface Held {
  keyId: string;
  release(): void;
  unsubscribe(): void;
}

export class StreamRegistry {
  readonly stats: EventsStats = newEventsStats();
  readonly #ctx: Pick<RelayContext, 'clock' | 'log' | 'store'>;
  readonly #feed: ClusterFeed;
  readonly #limits: StreamLimits;
  readonly #pipes: LivePipes;
  readonly #streams = new Map<EventStream, Held>();
  readonly #perKey = new Map<string, number>();
  #lastId = 0;

  constructor(opts: {
    ctx: Pick<RelayContext, 'clock' | 'log' | 'store'>;
    feed: ClusterFeed;
    limits: StreamLimits;
  }) {
    this.#ctx = opts.ctx;
    this.#feed = opts.feed;
    this.#limits = opts.limits;
    this.#pipes = new LivePipes({
      ctx: opts.ctx,
      credentials: opts.ctx.store,
      maxPipes: opts.limits.maxStreams,
    });
  }

  /** Streams open now. */
  get size(): number {
    return this.#streams.size;
  }

  /** Throws AT_CAPACITY or LIMIT_EXCEEDED when `key` may not open another stream now. */
  checkRoom(key: KeyPrincipal): void {
    const { maxStreams, maxStreamsPerKey } = this.#limits;
    if (this.#streams.size >= maxStreams) {
      this.stats.refused.total++;
      throw new TunnelError(
        'AT_CAPACITY',
        `event streams: the relay already holds ${maxStreams}; retry later`,
      );
    }
    if ((this.#perKey.get(key.id) ?? 0) >= maxStreamsPerKey) {
      this.stats.refused.key++;
      throw new TunnelError(
        'LIMIT_EXCEEDED',
        `event streams: access key ${key.id} already holds ${maxStreamsPerKey}; close one first`,
      );
    }
  }

  /**
   * Opens a stream of `key` on `res` (call checkRoom first, with no await in between). Throws UNAUTHENTICATED
   * when the key was revoked since it was checked; nothing is written then.
   */
  open(
    key: KeyPrincipal,
    res: ServerResponse,
    opts: { snapshot: boolean } = { snapshot: true },
  ): EventStream {
    const stream = new EventStream({
      res,
      feed: this.#feed,
      snapshot: opts.snapshot,
      visible: (group) => key.group === null || group === key.group,
      clock: this.#ctx.clock,
      maxQueuedBytes: this.#limits.maxQueuedBytes,
      nextId: () => ++this.#lastId,
      onEnd: (reason) => this.#ended(stream, reason),
    });
    const release = this.#pipes.add({ id: key.id, expiresAt: key.expiresAt }, (why, reason) =>
      stream.end(reason, why),
    );
    const unsubscribe = this.#feed.subscribe(stream);
    this.#streams.set(stream, { keyId: key.id, release, unsubscribe });
    this.#perKey.set(key.id, (this.#perKey.get(key.id) ?? 0) + 1);
    this.stats.opened++;
    return stream;
  }

  /** Ends every stream with an `end` event (CLOSED): the relay is closing. */
  endAll(): void {
    const closing = new TunnelError('CLOSED', 'the relay is shutting down');
    for (const stream of [...this.#streams.keys()]) stream.end('closing', closing);
  }

  close(): void {
    this.endAll();
    this.#pipes.close();
  }

  #ended(stream: EventStream, reason: StreamEndReason): void {
    const held = this.#streams.get(stream);
    if (held === undefined) return;
    this.#streams.delete(stream);
    held.release();
    held.unsubscribe();
    const left = (this.#perKey.get(held.keyId) ?? 1) - 1;
    if (left > 0) this.#perKey.set(held.keyId, left);
    else this.#perKey.delete(held.keyId);
    this.stats.ended[reason]++;
  }
}
