/**
 * The disco pings one peer's path selector has in flight, by transaction id: a pong is accepted only for
 * a ping listed here (once: it is removed), and a ping unanswered after its timeout is reported lost. At
 * most `max` are held; past that the oldest is forgotten (counted as lost).
 */
export interface PendingPing<T> {
  readonly txid: string;
  readonly target: T;
  readonly sentAt: number;
}

export class PendingPings<T> {
  readonly #max: number;
  /** txid hex -> ping, oldest first. */
  readonly #byTxid = new Map<string, PendingPing<T>>();

  constructor(max: number) {
    this.#max = Math.max(1, max);
  }

  get size(): number {
    return this.#byTxid.size;
  }

  /** Records a ping; returns the one forgotten to stay under the cap, if any. */
  add(ping: PendingPing<T>): PendingPing<T> | undefined {
    this.#byTxid.set(ping.txid, ping);
    if (this.#byTxid.size <= this.#max) return undefined;
    const oldest = this.#byTxid.values().next().value;
    if (oldest) this.#byTxid.delete(oldest.txid);
    return oldest;
  }

  /** The ping a pong with `txid` answers, removed; undefined when none is in flight. */
  take(txid: string): PendingPing<T> | undefined {
    const p = this.#byTxid.get(txid);
    if (p) this.#byTxid.delete(txid);
    return p;
  }

  /** Removes and returns the pings sent at or before `deadline`. */
  expire(deadline: number): PendingPing<T>[] {
    const out: PendingPing<T>[] = [];
    for (const p of this.#byTxid.values()) {
      if (p.sentAt > deadline) break;
      out.push(p);
    }
    for (const p of out) this.#byTxid.delete(p.txid);
    return out;
  }

  /** When the oldest ping in flight was sent, or undefined when none is. */
  get oldestSentAt(): number | undefined {
    return this.#byTxid.values().next().value?.sentAt;
  }

  clear(): void {
    this.#byTxid.clear();
  }
}
