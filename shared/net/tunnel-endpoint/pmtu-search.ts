/**
 * Datagram packetization layer path MTU discovery (DPLPMTUD, RFC 8899) for one direct path: a state machine
 * on the injected clock, no I/O. The path starts at the base size (a 1,500-byte IP packet); the owner sends
 * the padded probes it asks for (disco `probe` messages, shared/net/disco/disco-codec.ts) and hands it each ack.
 * The MTU rises to a size only once a probe of that size was acknowledged: the path carried it.
 *
 * - searching: probes the next step above the MTU (steps no larger than the ceiling, the first hop's own
 *   limit). An ack raises the MTU to it; maxProbes probes lost in a row end the search below that size.
 * - complete: while the MTU is above the base and the path carries traffic, a probe of the MTU's own size
 *   confirms it every confirmMs; maxProbes of those lost in a row is a black hole: the MTU drops back to the
 *   base at once. raiseMs after the search ended (or the black hole), the search runs again.
 * One probe is in flight at a time; a probe unanswered after probeTimeoutMs is lost.
 */
import type { Clock } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import { newTxid } from '../disco/disco-codec.js';

export interface PmtuTimers {
  /** A probe unanswered this long is lost. */
  readonly probeTimeoutMs: number;
  /** Probes lost in a row at one size before it is given up (RFC 8899 MAX_PROBES). */
  readonly maxProbes: number;
  /** A raised MTU is confirmed this often while the path carries traffic (black-hole detection). */
  readonly confirmMs: number;
  /** The search runs again this long after it ended (RFC 8899 PMTU_RAISE_TIMER). */
  readonly raiseMs: number;
}

export const DEFAULT_PMTU_TIMERS: PmtuTimers = {
  probeTimeoutMs: 1_000,
  maxProbes: 3,
  confirmMs: 5_000,
  raiseMs: 600_000,
};

export interface PmtuSearchOptions {
  readonly clock: Clock;
  /** The size (bytes of datagram) the path starts at and falls back to. */
  readonly base: number;
  /** Larger sizes to try, ascending. */
  readonly steps: readonly number[];
  /** The largest datagram the first hop carries (steps above it are never probed). */
  readonly ceiling: number;
  readonly timers?: Partial<PmtuTimers>;
  readonly newTxid?: () => Buffer;
}

export interface PmtuProbe {
  readonly txid: Buffer;
  /** The whole probe datagram's length. */
  readonly size: number;
}

export interface PmtuStats {
  probes: number;
  acks: number;
  lost: number;
  /** The MTU went up after an acknowledged probe. */
  raised: number;
  /** A raised MTU stopped carrying probes: back to the base. */
  blackHoles: number;
}

export type PmtuPhase = 'searching' | 'complete';

interface InFlight {
  readonly txid: string;
  readonly size: number;
  readonly sentAt: number;
}

const NEVER = Number.NEGATIVE_INFINITY;

/** Checks the timers (BAD_CONFIG naming the bad one). */
export function pmtuTimers(t: Partial<PmtuTimers> = {}): PmtuTimers {
  const out = { ...DEFAULT_PMTU_TIMERS, ...t };
  for (const [name, v] of Object.entries(out))
    if (!Number.isInteger(v) || v < 1)
      throw new TunnelError('BAD_CONFIG', `pmtu: ${name} ${v} is not a positive integer`);
  return out;
}

export class PmtuSearch {
  readonly stats: PmtuStats = { probes: 0, acks: 0, lost: 0, raised: 0, blackHoles: 0 };
  readonly #clock: Clock;
  readonly #timers: PmtuTimers;
  readonly #base: number;
  readonly #steps: readonly number[];
  readonly #newTxid: () => Buffer;
  #mtu: number;
  #phase: PmtuPhase = 'searching';
  /** The smallest size known not to pass, until the next search. */
  #failedAt = Number.POSITIVE_INFINITY;
  #inFlight: InFlight | undefined;
  #misses = 0;
  #lastConfirmAt = NEVER;
  #raiseAt = NEVER;

  constructor(o: PmtuSearchOptions) {
    this.#clock = o.clock;
    this.#timers = pmtuTimers(o.timers);
    this.#base = o.base;
    this.#mtu = o.base;
    this.#steps = o.steps.filter((s) => s > o.base && s <= o.ceiling).sort((a, b) => a - b);
    this.#newTxid = o.newTxid ?? newTxid;
  }

  /** The largest datagram the path has carried (confirmed), or the base. */
  get mtu(): number {
    return this.#mtu;
  }

  get phase(): PmtuPhase {
    return this.#phase;
  }

  /**
   * The probe to send now, if any, recorded as in flight. `active`: the path carried traffic since the last
   * call (a raised MTU is confirmed only then).
   */
  probeDue(active: boolean): PmtuProbe | undefined {
    const now = this.#clock.now();
    this.#evaluate(now);
    if (this.#inFlight) return undefined;
    if (this.#phase === 'searching') {
      const next = this.#nextStep();
      if (next !== undefined) return this.#send(next, now);
      this.#complete(now);
    }
    if (this.#confirmDue(active, now)) {
      this.#lastConfirmAt = now;
      return this.#send(this.#mtu, now);
    }
    return undefined;
  }

  /** An ack of `size` for `txid`. True when it answers the probe in flight (the MTU may have risen). */
  ack(txid: Buffer, size: number): boolean {
    const p = this.#inFlight;
    if (!p || p.txid !== txid.toString('hex') || p.size !== size) return false;
    this.#inFlight = undefined;
    this.#misses = 0;
    this.#lastConfirmAt = this.#clock.now();
    this.stats.acks++;
    if (size > this.#mtu) {
      this.#mtu = size;
      this.stats.raised++;
    }
    return true;
  }

  /** When (monotonic ms) the next probe or timeout is due; `active` as for probeDue. */
  nextWakeAt(active: boolean): number {
    const now = this.#clock.now();
    const p = this.#inFlight;
    if (p) return Math.max(now, p.sentAt + this.#timers.probeTimeoutMs);
    if (this.#phase === 'searching') return now;
    const confirmAt =
      this.#mtu > this.#base && active
        ? this.#lastConfirmAt + this.#timers.confirmMs
        : Number.POSITIVE_INFINITY;
    return Math.max(now, Math.min(confirmAt, this.#raiseAt));
  }

  /** Applies a lost probe (and what follows from it: a smaller ceiling, a black hole) and the raise timer. */
  #evaluate(now: number): void {
    const p = this.#inFlight;
    if (p && now - p.sentAt >= this.#timers.probeTimeoutMs) {
      this.#inFlight = undefined;
      this.stats.lost++;
      if (++this.#misses >= this.#timers.maxProbes) this.#givenUp(p.size, now);
    }
    if (this.#phase === 'complete' && now >= this.#raiseAt) {
      this.#phase = 'searching';
      this.#failedAt = Number.POSITIVE_INFINITY;
    }
  }

  /** maxProbes probes of `size` lost: above the MTU the search ends below it; at the MTU it is a black hole. */
  #givenUp(size: number, now: number): void {
    this.#misses = 0;
    this.#failedAt = Math.min(this.#failedAt, size);
    if (size <= this.#mtu && this.#mtu > this.#base) {
      this.#mtu = this.#base;
      this.stats.blackHoles++;
      this.#complete(now);
    }
  }

  #complete(now: number): void {
    this.#phase = 'complete';
    this.#raiseAt = now + this.#timers.raiseMs;
  }

  #nextStep(): number | undefined {
    return this.#steps.find((s) => s > this.#mtu && s < this.#failedAt);
  }

  #confirmDue(active: boolean, now: number): boolean {
    if (this.#mtu <= this.#base || !active) return false;
    return this.#misses > 0 || now - this.#lastConfirmAt >= this.#timers.confirmMs;
  }

  #send(size: number, now: number): PmtuProbe {
    const txid = this.#newTxid();
    this.#inFlight = { txid: txid.toString('hex'), size, sentAt: now };
    this.stats.probes++;
    return { txid, size };
  }
}
