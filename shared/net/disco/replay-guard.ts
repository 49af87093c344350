/**
 * Replay protection for disco messages that opened (disco-codec.ts): a message is accepted once, and only
 * while its sentAt lies within `windowMs` of the receiver's wall clock (either side: clocks differ).
 *
 * Per sender the guard remembers the txids of the last `perSender` accepted messages. When it forgets one
 * it raises that sender's floor to the forgotten message's sentAt, and from then on refuses anything sent
 * at or before the floor: so a message is never accepted twice, however long the guard runs, with memory
 * bounded. Senders are capped at `maxSenders` (the least recently heard is forgotten); when one is, every
 * sender's floor rises to the newest sentAt forgotten, so the cap can cost refused messages but never an
 * accepted replay.
 */
import type { Clock } from '../../clock.js';
import { keyToBase64 } from '../../keys.js';

export const DEFAULT_REPLAY_WINDOW_MS = 120_000;
export const DEFAULT_REPLAY_PER_SENDER = 64;
export const DEFAULT_REPLAY_MAX_SENDERS = 10_000;

export interface ReplayGuardOptions {
  readonly clock: Clock;
  readonly windowMs?: number;
  readonly perSender?: number;
  readonly maxSenders?: number;
}

interface SenderState {
  /** txid (hex) -> sentAt, oldest accepted first. */
  readonly seen: Map<string, number>;
  floor: number;
  newest: number;
}

export type ReplayVerdict = 'stale' | 'future' | 'replay' | null;

export class ReplayGuard {
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #perSender: number;
  readonly #maxSenders: number;
  readonly #senders = new Map<string, SenderState>();
  /** Newest sentAt of a sender the guard forgot: nothing at or before it is accepted from anyone. */
  #forgottenFloor = Number.NEGATIVE_INFINITY;

  constructor(o: ReplayGuardOptions) {
    this.#clock = o.clock;
    this.#windowMs = o.windowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    this.#perSender = Math.max(1, o.perSender ?? DEFAULT_REPLAY_PER_SENDER);
    this.#maxSenders = Math.max(1, o.maxSenders ?? DEFAULT_REPLAY_MAX_SENDERS);
  }

  get senders(): number {
    return this.#senders.size;
  }

  /** Null when the message is fresh (and from now on remembered), else why it is refused. */
  check(sender: Uint8Array, txid: Uint8Array, sentAt: number): ReplayVerdict {
    const now = this.#clock.wallNow();
    if (sentAt < now - this.#windowMs) return 'stale';
    if (sentAt > now + this.#windowMs) return 'future';
    if (sentAt <= this.#forgottenFloor) return 'replay';
    const id = keyToBase64(sender);
    const state = this.#senders.get(id);
    const tx = Buffer.from(txid.buffer, txid.byteOffset, txid.byteLength).toString('hex');
    if (state && (sentAt <= state.floor || state.seen.has(tx))) return 'replay';
    const s = state ?? { seen: new Map<string, number>(), floor: Number.NEGATIVE_INFINITY, newest: sentAt };
    s.seen.set(tx, sentAt);
    s.newest = Math.max(s.newest, sentAt);
    if (s.seen.size > this.#perSender) this.#forgetOldest(s);
    this.#senders.delete(id);
    this.#senders.set(id, s);
    if (this.#senders.size > this.#maxSenders) this.#forgetSender();
    return null;
  }

  #forgetOldest(s: SenderState): void {
    const [tx, at] = s.seen.entries().next().value ?? ['', Number.NEGATIVE_INFINITY];
    s.seen.delete(tx);
    s.floor = Math.max(s.floor, at);
  }

  #forgetSender(): void {
    const [id, s] = this.#senders.entries().next().value ?? ['', undefined];
    if (!s) return;
    this.#senders.delete(id);
    this.#forgottenFloor = Math.max(this.#forgottenFloor, s.newest);
  }
}
