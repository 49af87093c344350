/**
 * The acknowledgements a receiver owes and when they are due: its ACK policy.
 *
 * Each data segment received is owed an ACK (selective: its sn and echoed ts). Those the cumulative una covers
 * by the time they go leave as one ACK segment (the newest, for the sender's RTT sample); those past a hole
 * leave one segment each. They go out together, in one datagram, when the first of these holds:
 * - `ackEvery` are pending;
 * - the oldest has waited `ackDelayMs` (the session's timer);
 * - something asked for them at once (ackNow(): a gap or a duplicate, a small receive window, a window probe;
 *   the session decides);
 * - a datagram goes out anyway (the session lets them ride along).
 * A short segment (its sender has no more for now) is held like the others: in an exchange of small messages
 * this side's reply, or the next request, goes within the delay and carries the ACK, one datagram instead of two.
 * With `holdShort` a short segment does not count towards `ackEvery` either: where full segments are acknowledged
 * one by one (the relay), a lone request or reply still waits the delay for a datagram to ride on (up to 8 x
 * `ackEvery` held ones: then they go).
 * Each ACK carries how long it was held (segment.ts), so the sender's RTT samples leave the delay out.
 *
 * The policy follows the path (tunnel-streams/constants.ts): every segment at once where a segment is large
 * and the path queues (the relay), every few where segments are small and the cost is per datagram (a direct
 * UDP path). setPolicy() applies a new one at once, to what is pending too.
 */
import { TunnelError } from '../../errors.js';
import { seqDiff } from './segment.js';

export interface AckPolicy {
  /** ACKs go at once when this many are pending (1..1024). */
  ackEvery: number;
  /** Longest time (ms) an ACK waits for others to join it (0..60,000). */
  ackDelayMs: number;
  /** A short segment's ACK waits the delay whatever `ackEvery` says (it does not count towards it). */
  holdShort?: boolean;
}

/** With holdShort, the pending ACKs go at once when this many times ackEvery are held. */
const SHORT_HELD_MAX = 8;

/** Entries per pending ACK in the flat array: sn, ts, arrival time. */
const STRIDE = 3;

export function checkAckPolicy(p: AckPolicy): void {
  if (!Number.isInteger(p.ackEvery) || p.ackEvery < 1 || p.ackEvery > 1024) {
    throw new TunnelError('BAD_CONFIG', `arq ackEvery: ${p.ackEvery} is not an integer in [1, 1024]`);
  }
  if (!Number.isFinite(p.ackDelayMs) || p.ackDelayMs < 0 || p.ackDelayMs > 60_000) {
    throw new TunnelError('BAD_CONFIG', `arq ackDelayMs: ${p.ackDelayMs} is not a number in [0, 60000]`);
  }
}

export class PendingAcks {
  #ackEvery: number;
  #ackDelayMs: number;
  #holdShort: boolean;
  /** Pending ACKs that count towards ackEvery (all but the held short ones). */
  #counted = 0;
  /** sn, ts, arrival time of each pending ACK, oldest first (one flat array, reused). */
  #entries: number[] = [];
  #now = false;

  constructor(policy: AckPolicy) {
    checkAckPolicy(policy);
    this.#ackEvery = policy.ackEvery;
    this.#ackDelayMs = policy.ackDelayMs;
    this.#holdShort = policy.holdShort === true;
  }

  get policy(): AckPolicy {
    const p: AckPolicy = { ackEvery: this.#ackEvery, ackDelayMs: this.#ackDelayMs };
    if (this.#holdShort) p.holdShort = true;
    return p;
  }

  get ackEvery(): number {
    return this.#ackEvery;
  }

  /** ACKs pending. */
  get count(): number {
    return this.#entries.length / STRIDE;
  }

  /** When the pending ACKs are due by the timer (Infinity with none pending). */
  get dueAt(): number {
    return this.#entries.length > 0 ? this.#entries[2]! + this.#ackDelayMs : Number.POSITIVE_INFINITY;
  }

  /** A new policy, applied at once to what is pending as well. Throws BAD_CONFIG for a bad one. */
  setPolicy(policy: AckPolicy): void {
    checkAckPolicy(policy);
    this.#ackEvery = policy.ackEvery;
    this.#ackDelayMs = policy.ackDelayMs;
    this.#holdShort = policy.holdShort === true;
    if (!this.#holdShort) this.#counted = this.count;
  }

  /** Owes an ACK for segment `sn` sent at `ts` (the sender's), which arrived at `at`; `short`: less than a full one. */
  add(sn: number, ts: number, at: number, short = false): void {
    this.#entries.push(sn, ts, at);
    if (!(short && this.#holdShort)) this.#counted++;
  }

  /** The pending ACKs (and any added before the next take) go at the next flush. */
  ackNow(): void {
    this.#now = true;
  }

  /** Whether the pending ACKs must go now (with no datagram going out anyway). */
  due(now: number): boolean {
    if (this.#now || this.#counted >= this.#ackEvery || now >= this.dueAt) return true;
    // Held short ones go with every SHORT_HELD_MAX: a peer sending small segments in bulk (its MTU smaller than
    // this side's for a moment, around a path switch) is acknowledged as on a direct path, not once per delay.
    return this.count >= SHORT_HELD_MAX * this.#ackEvery;
  }

  /**
   * Hands the pending ACKs to `put` (sn, echoed ts, ms it was held) oldest first, and clears them. Those below
   * `cumulative` (the receiver's next expected sn: the una every segment carries already covers them) go as one,
   * the highest, for its RTT sample; those above it (past a hole) each go, so the sender sees what it may resend.
   * The callback must not add ACKs.
   */
  take(now: number, put: (sn: number, ts: number, heldMs: number) => void, cumulative?: number): void {
    const e = this.#entries;
    let top = -1;
    for (let i = 0; i < e.length; i += STRIDE) {
      if (cumulative !== undefined && seqDiff(e[i]!, cumulative) < 0) {
        if (top < 0 || seqDiff(e[i]!, e[top]!) > 0) top = i;
        continue;
      }
      put(e[i]!, e[i + 1]!, now - e[i + 2]!);
    }
    if (top >= 0) put(e[top]!, e[top + 1]!, now - e[top + 2]!);
    e.length = 0;
    this.#counted = 0;
    this.#now = false;
  }

  clear(): void {
    this.#entries.length = 0;
    this.#counted = 0;
    this.#now = false;
  }
}
