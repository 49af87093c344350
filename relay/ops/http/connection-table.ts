/**
 * Every TCP connection the relay holds, with the two caps applied when one is accepted: the total (every
 * state counts) and, per source, the connections still pending (not yet through a complete request or an
 * upgrade). At the total cap a new connection takes the place of the oldest pending one (it is evicted);
 * only when every held connection is established is the new one refused. The maps are bounded by the total
 * cap: a connection is in them only while it is held.
 */
export interface TrackedConnection {
  /** Per-source key (relay/ops/http/source-address.ts: the IPv4 address or the IPv6 /64). */
  readonly source: string;
  /** The accepted TCP socket (with TLS: the socket under the TLS layer). */
  readonly socket: HeldSocket;
  /** True until the connection has finished a request or upgraded. */
  pending: boolean;
  /** Responses of this connection not yet closed (several when requests are pipelined). */
  readonly responses: Set<{ readonly headersSent: boolean }>;
}

export type Admission =
  | { kind: 'admitted'; connection: TrackedConnection; evicted: TrackedConnection | null }
  | { kind: 'refused'; reason: 'source_cap' | 'total_cap'; source: string }
  /** The peer was gone before it could be counted (no address any more). */
  | { kind: 'gone' };

/** What identifies a connection on both the TCP socket and the TLS socket over it. */
export interface Endpoints {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
}

/** The part of a net.Socket the table and the guard use. */
export interface HeldSocket extends Endpoints {
  readonly destroyed: boolean;
  destroy(): void;
}

function endpointKey(s: Endpoints): string | null {
  if (s.remoteAddress === undefined || s.remotePort === undefined) return null;
  return `${s.remoteAddress}|${s.remotePort}|${s.localAddress ?? ''}|${s.localPort ?? ''}`;
}

export class ConnectionTable {
  readonly #maxConnections: number;
  readonly #maxPendingPerSource: number | null;
  readonly #byKey = new Map<string, TrackedConnection>();
  /** Pending connections, oldest first (a Set keeps insertion order). */
  readonly #pending = new Set<TrackedConnection>();
  readonly #pendingBySource = new Map<string, number>();
  /** Sockets already matched to their connection (the TLS socket of a TCP one). */
  readonly #seen = new WeakMap<object, TrackedConnection>();
  readonly #keys = new WeakMap<TrackedConnection, string>();

  constructor(limits: { maxConnections: number; maxPendingPerSource: number | null }) {
    this.#maxConnections = limits.maxConnections;
    this.#maxPendingPerSource = limits.maxPendingPerSource;
  }

  get size(): number {
    return this.#byKey.size;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Applies the caps to a new connection from `source`; an admitted one is held until `remove`. */
  admit(socket: HeldSocket, source: string): Admission {
    const key = endpointKey(socket);
    if (key === null) return { kind: 'gone' };
    const cap = this.#maxPendingPerSource;
    if (cap !== null && (this.#pendingBySource.get(source) ?? 0) >= cap) {
      return { kind: 'refused', reason: 'source_cap', source };
    }
    let evicted: TrackedConnection | null = null;
    if (this.#byKey.size >= this.#maxConnections) {
      evicted = this.#pending.values().next().value ?? null;
      if (evicted === null) return { kind: 'refused', reason: 'total_cap', source };
      this.remove(evicted);
    }
    const connection: TrackedConnection = { source, socket, pending: true, responses: new Set() };
    this.#byKey.set(key, connection);
    this.#keys.set(connection, key);
    this.#seen.set(socket, connection);
    this.#pending.add(connection);
    this.#pendingBySource.set(source, (this.#pendingBySource.get(source) ?? 0) + 1);
    return { kind: 'admitted', connection, evicted };
  }

  /** The held connection a socket belongs to (the TCP socket itself or the TLS socket over it). */
  find(socket: Endpoints & object): TrackedConnection | undefined {
    const known = this.#seen.get(socket);
    if (known) return this.#keys.has(known) ? known : undefined;
    const key = endpointKey(socket);
    const found = key === null ? undefined : this.#byKey.get(key);
    if (found) this.#seen.set(socket, found);
    return found;
  }

  /** The connection finished a request or upgraded: it no longer counts against its source. */
  settle(c: TrackedConnection): void {
    if (!c.pending) return;
    c.pending = false;
    this.#pending.delete(c);
    this.#uncountSource(c);
  }

  remove(c: TrackedConnection): void {
    const key = this.#keys.get(c);
    if (key === undefined) return;
    this.#keys.delete(c);
    this.#byKey.delete(key);
    if (this.#pending.delete(c)) this.#uncountSource(c);
  }

  #uncountSource(c: TrackedConnection): void {
    const n = (this.#pendingBySource.get(c.source) ?? 1) - 1;
    if (n > 0) this.#pendingBySource.set(c.source, n);
    else this.#pendingBySource.delete(c.source);
  }
}
