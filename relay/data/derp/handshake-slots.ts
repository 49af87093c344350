/**
 * The DERP server's pre-admission slots: a connection holds one from its WebSocket upgrade until it is admitted
 * or closed. Two rules keep a flood of upgrades that never send ClientInfo from locking real agents out:
 *
 * - Per source (relay/ops/http/source-address.ts: IPv4 address or IPv6 /64), at most `maxPerSource` slots; an upgrade
 *   over it is refused (HTTP 429), so one address cannot take the table.
 * - When all `maxTotal` slots are held, a new arrival takes the slot of the oldest connection that has still
 *   not sent a valid ClientInfo: that socket is cut. A client that answers ServerKey within a round trip keeps
 *   its slot unless `maxTotal` newer upgrades arrive before its ClientInfo does, so flooders (from any number of
 *   sources) only evict each other. Connections that sent a valid ClientInfo (admission check running) are
 *   never evicted; only when every slot is held by one is an upgrade refused (HTTP 503).
 *
 * Memory: one entry per held slot, and the per-source map holds only sources with a held slot, so both are
 * bounded by `maxTotal`.
 */

/** Why an upgrade got no slot. */
export type SlotRefusal = 'source_limit' | 'full';

/** The counters the table updates (a subset of DerpStats). */
export interface SlotCounters {
  handshaking: number;
  refusedSourceLimit: number;
  handshakeEvictions: number;
}

export interface HandshakeSlotsOptions {
  readonly maxTotal: number;
  readonly maxPerSource: number;
  readonly counters: SlotCounters;
}

type SlotState = 'waiting' | 'proved' | 'released';

/** One held slot. `cut` ends the connection at once when the slot is evicted. */
export class HandshakeSlot {
  readonly source: string;
  readonly #table: HandshakeSlots;
  readonly #cut: () => void;
  #state: SlotState = 'waiting';

  constructor(table: HandshakeSlots, source: string, cut: () => void) {
    this.#table = table;
    this.source = source;
    this.#cut = cut;
  }

  get state(): SlotState {
    return this.#state;
  }

  /** The connection sent a valid ClientInfo: it keeps the slot until admitted but can no longer be evicted. */
  prove(): void {
    if (this.#state !== 'waiting') return;
    this.#state = 'proved';
    this.#table.onProved(this);
  }

  /** Gives the slot back (admitted, closed or evicted). Idempotent. */
  release(): void {
    if (this.#state === 'released') return;
    this.#state = 'released';
    this.#table.onReleased(this);
  }

  /** Called by the table: release, then end the connection. */
  evict(): void {
    this.release();
    this.#cut();
  }
}

export class HandshakeSlots {
  readonly #maxTotal: number;
  readonly #maxPerSource: number;
  readonly #counters: SlotCounters;
  readonly #bySource = new Map<string, number>();
  /** Slots still waiting for ClientInfo, oldest first (a Set keeps insertion order). */
  readonly #waiting = new Set<HandshakeSlot>();
  #held = 0;

  constructor(opts: HandshakeSlotsOptions) {
    this.#maxTotal = opts.maxTotal;
    this.#maxPerSource = opts.maxPerSource;
    this.#counters = opts.counters;
  }

  get held(): number {
    return this.#held;
  }

  /** Slots held from `source` now. */
  heldBy(source: string): number {
    return this.#bySource.get(source) ?? 0;
  }

  /** A slot for a new connection from `source`, evicting the oldest waiting one when the table is full. */
  take(source: string, cut: () => void): HandshakeSlot | SlotRefusal {
    if (this.heldBy(source) >= this.#maxPerSource) {
      this.#counters.refusedSourceLimit++;
      return 'source_limit';
    }
    if (this.#held >= this.#maxTotal && !this.#evictOldest()) return 'full';
    const slot = new HandshakeSlot(this, source, cut);
    this.#bySource.set(source, this.heldBy(source) + 1);
    this.#waiting.add(slot);
    this.#held++;
    this.#counters.handshaking = this.#held;
    return slot;
  }

  #evictOldest(): boolean {
    const oldest = this.#waiting.values().next();
    if (oldest.done) return false;
    this.#counters.handshakeEvictions++;
    oldest.value.evict();
    return true;
  }

  /** HandshakeSlot.prove() */
  onProved(slot: HandshakeSlot): void {
    this.#waiting.delete(slot);
  }

  /** HandshakeSlot.release() */
  onReleased(slot: HandshakeSlot): void {
    this.#waiting.delete(slot);
    const left = this.heldBy(slot.source) - 1;
    if (left > 0) this.#bySource.set(slot.source, left);
    else this.#bySource.delete(slot.source);
    this.#held--;
    this.#counters.handshaking = this.#held;
  }
}
