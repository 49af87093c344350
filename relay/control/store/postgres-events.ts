/**
 * Changes other replicas must see at once, sent with PostgreSQL NOTIFY inside the transaction that
 * makes them (so they are delivered only if it commits) and received on one LISTEN connection per
 * replica. The payload names the replica that sent it, so a replica does not act twice on its own
 * change (it tells its local listeners directly, after the commit).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { RemoteKeyLoss } from './types.js';

export const EVENTS_CHANNEL = 'tunnel_relay_events';
/** After the LISTEN connection drops, the first reconnect waits this long, doubling up to the max. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 10_000;

export type StoreEvent = { kind: 'key-revoked'; id: string } | RemoteKeyLoss;

const KEY_LOSS_KINDS: ReadonlySet<string> = new Set<RemoteKeyLoss['kind']>([
  'cluster-deleted',
  'cluster-denied',
  'agent-unjoined',
]);

function isKeyLossKind(kind: unknown): kind is RemoteKeyLoss['kind'] {
  return typeof kind === 'string' && KEY_LOSS_KINDS.has(kind);
}

export interface EventEnvelope {
  origin: string;
  event: StoreEvent;
}

/** A random id for this store instance (not secret). */
export function newOrigin(): string {
  return randomBytes(8).toString('hex');
}

export function encodeEvent(envelope: EventEnvelope): string {
  const e = envelope.event;
  return e.kind === 'key-revoked'
    ? JSON.stringify({ o: envelope.origin, k: e.kind, id: e.id })
    : JSON.stringify({ o: envelope.origin, k: e.kind, c: e.cluster, pk: e.publicKey });
}

/** The envelope of a NOTIFY payload, or null when it is not one this relay sends. */
export function decodeEvent(payload: string | undefined): EventEnvelope | null {
  if (payload === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const { o, k, id, c, pk } = v as Record<string, unknown>;
  if (typeof o !== 'string') return null;
  if (k === 'key-revoked' && typeof id === 'string') return { origin: o, event: { kind: k, id } };
  if (isKeyLossKind(k) && typeof c === 'string' && typeof pk === 'string') {
    return { origin: o, event: { kind: k, cluster: c, publicKey: pk } };
  }
  return null;
}

export interface EventFeedOptions {
  client: () => pg.Client;
  origin: string;
  /** Called with every event another replica committed. Must not throw. */
  onEvent(event: StoreEvent): void;
  /** Called when the LISTEN connection drops or cannot be re-established (message without secrets). */
  onError(message: string): void;
}

/** The LISTEN connection: reconnects with backoff until closed. */
export class EventFeed {
  readonly #opts: EventFeedOptions;
  #client: pg.Client | null = null;
  #closed = false;
  #retryMs = RECONNECT_MIN_MS;
  #timer: NodeJS.Timeout | null = null;

  private constructor(opts: EventFeedOptions) {
    this.#opts = opts;
  }

  /** Connects and listens; rejects when the first connection fails. */
  static async start(opts: EventFeedOptions): Promise<EventFeed> {
    const feed = new EventFeed(opts);
    await feed.#connect();
    return feed;
  }

  async #connect(): Promise<void> {
    const client = this.#opts.client();
    client.on('notification', (n) => {
      const envelope = decodeEvent(n.payload);
      if (envelope && envelope.origin !== this.#opts.origin) this.#opts.onEvent(envelope.event);
    });
    client.on('error', (err) => this.#lost(client, err.message));
    client.on('end', () => this.#lost(client, 'connection ended'));
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#retryMs = RECONNECT_MIN_MS;
  }

  #lost(client: pg.Client, reason: string): void {
    if (this.#closed || this.#client !== client) return;
    this.#client = null;
    client.end().catch(() => undefined);
    this.#opts.onError(`store: change notifications lost (${reason}); reconnecting`);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect().catch((err: Error) => {
        this.#opts.onError(`store: change notifications: reconnect failed (${err.message})`);
        this.#retryMs = Math.min(RECONNECT_MAX_MS, this.#retryMs * 2);
        this.#schedule();
      });
    }, this.#retryMs);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }
}
