/**
 * Segments sent and not yet acknowledged, in sn order (contiguous from una to sndNxt - 1), with the
 * bookkeeping for selective acks, fast-retransmit counting, timeouts and the lost queue.
 *
 * A segment whose bytes came from a pool (send-queue.ts) is given back to it when the segment is
 * acknowledged (cumulatively or selectively) and on clear(); never while it is unacknowledged (in flight,
 * marked lost or queued for a fast retransmission), since a retransmission copies from it again.
 */
import type { BufferPool } from '../buffers/buffer-pool.js';
import { seqDiff } from './segment.js';

export interface OutSeg {
  sn: number;
  data: Buffer;
  /** The pool `data` goes back to once acknowledged (null: not pooled, or given back already). */
  pool: BufferPool | null;
  /** Bytes of data. */
  len: number;
  /** Send time (ts units, u32) of the latest transmission. */
  ts: number;
  resendAt: number;
  rto: number;
  xmit: number;
  fastack: number;
  acked: boolean;
  fastQueued: boolean;
  /** Timed out but not yet resent (waiting for congestion-window room). */
  lost: boolean;
}

export class SendWindow {
  sndNxt: number;
  /** Segments not acknowledged, and their bytes. */
  unacked = 0;
  unackedBytes = 0;
  /** Segments marked lost and waiting to be resent. */
  lostCount = 0;
  /** Earliest resendAt among segments (may be stale-early, never late). */
  nextResendAt = Number.POSITIVE_INFINITY;
  /** Bytes acknowledged so far. */
  delivered = 0;
  #sendBuffer: OutSeg[] = [];
  #head = 0;
  #lost: OutSeg[] = [];
  #lostHead = 0;

  constructor(initialSn: number) {
    this.sndNxt = initialSn;
  }

  /** Segments between una and sndNxt (selectively acknowledged ones included). */
  get inFlight(): number {
    return this.#sendBuffer.length - this.#head;
  }
  get una(): number {
    return this.#head < this.#sendBuffer.length ? this.#sendBuffer[this.#head]!.sn : this.sndNxt;
  }
  /** Segments believed to be in the network: unacknowledged and not marked lost. */
  get pipe(): number {
    return this.unacked - this.lostCount;
  }

  /** Adds a segment; `pool` is where its data goes back once acknowledged, if it came from a pool. */
  add(data: Buffer, rto: number, pool: BufferPool | null = null): OutSeg {
    const len = data.length;
    const seg: OutSeg = {
      sn: this.sndNxt,
      data,
      pool: pool?.owns(data) ? pool : null,
      len,
      ts: 0,
      resendAt: 0,
      rto,
      xmit: 0,
      fastack: 0,
      acked: false,
      fastQueued: false,
      lost: false,
    };
    this.sndNxt = (this.sndNxt + 1) >>> 0;
    this.#sendBuffer.push(seg);
    this.unacked++;
    this.unackedBytes += len;
    return seg;
  }

  /** Records a transmission of `seg` at `now` (ms), stamped `ts` (the session's ts units). */
  sent(seg: OutSeg, now: number, ts: number): void {
    if (seg.lost) {
      seg.lost = false;
      this.lostCount--;
    }
    seg.xmit++;
    seg.ts = ts;
    seg.fastack = 0;
    seg.resendAt = now + seg.rto;
    if (seg.resendAt < this.nextResendAt) this.nextResendAt = seg.resendAt;
  }

  /** Cumulative ack: everything below `una`. Ignored if it acknowledges data never sent. */
  onUna(una: number): void {
    if (seqDiff(una, this.sndNxt) > 0) return;
    while (this.#head < this.#sendBuffer.length) {
      const seg = this.#sendBuffer[this.#head]!;
      if (seqDiff(seg.sn, una) >= 0) break;
      this.#markAcked(seg);
      this.#head++;
    }
    this.#trim();
  }

  /** Selective ack of one segment. */
  onAck(sn: number): void {
    const idx = this.#head + seqDiff(sn, this.una);
    if (idx < this.#head || idx >= this.#sendBuffer.length) return;
    this.#markAcked(this.#sendBuffer[idx]!);
    this.#trim();
  }

  /**
   * Counts the acks of one datagram (`acked`: their sns, ascending; the last is the highest, sent at `ackTs`)
   * against every earlier unacknowledged segment sent no later: each such segment counts the acks above it, so
   * a run acknowledged in one datagram counts as much as in several. Pushes those reaching `threshold` onto
   * `out`. Returns how many were pushed.
   */
  fastScan(acked: readonly number[], ackTs: number, threshold: number, limit: number, out: OutSeg[]): number {
    const maxAck = acked[acked.length - 1];
    if (maxAck === undefined) return 0;
    let n = 0;
    let below = 0;
    for (let i = this.#head; i < this.#sendBuffer.length; i++) {
      const seg = this.#sendBuffer[i]!;
      if (seqDiff(seg.sn, maxAck) >= 0) break;
      while (below < acked.length && seqDiff(acked[below]!, seg.sn) <= 0) below++;
      if (seg.acked || seqDiff(ackTs, seg.ts) < 0) continue;
      seg.fastack += acked.length - below;
      if (seg.fastack >= threshold && seg.xmit < limit && !seg.fastQueued) {
        seg.fastQueued = true;
        out.push(seg);
        n++;
      }
    }
    return n;
  }

  /**
   * Doubles the RTO of every segment whose timer expired; returns the first `burst` of them to resend now
   * and marks the others lost (resent later through nextLost()). `expired` tells whether any timer fired.
   */
  expire(now: number, maxRto: number, burst: number): { resend: OutSeg[]; expired: boolean } {
    const resend: OutSeg[] = [];
    let expired = false;
    let next = Number.POSITIVE_INFINITY;
    for (let i = this.#head; i < this.#sendBuffer.length; i++) {
      const seg = this.#sendBuffer[i]!;
      if (seg.acked || seg.lost) continue;
      if (now >= seg.resendAt) {
        expired = true;
        seg.rto = Math.min(maxRto, seg.rto * 2);
        if (resend.length < burst) {
          resend.push(seg);
          continue;
        }
        seg.lost = true;
        seg.resendAt = Number.POSITIVE_INFINITY;
        this.lostCount++;
        this.#lost.push(seg);
        continue;
      }
      if (seg.resendAt < next) next = seg.resendAt;
    }
    this.nextResendAt = next;
    return { resend, expired };
  }

  /** The oldest segment still marked lost, removed from the lost queue. */
  nextLost(): OutSeg | undefined {
    while (this.#lostHead < this.#lost.length) {
      const seg = this.#lost[this.#lostHead++]!;
      if (this.#lostHead === this.#lost.length) {
        this.#lost.length = 0;
        this.#lostHead = 0;
      } else if (this.#lostHead >= 1024 && this.#lostHead * 2 >= this.#lost.length) {
        this.#lost = this.#lost.slice(this.#lostHead);
        this.#lostHead = 0;
      }
      if (seg.lost && !seg.acked) return seg;
    }
    return undefined;
  }

  clear(): void {
    for (let i = this.#head; i < this.#sendBuffer.length; i++) this.#giveBack(this.#sendBuffer[i]!);
    this.#sendBuffer = [];
    this.#head = 0;
    this.#lost = [];
    this.#lostHead = 0;
    this.unacked = 0;
    this.unackedBytes = 0;
    this.lostCount = 0;
    this.nextResendAt = Number.POSITIVE_INFINITY;
  }

  #markAcked(seg: OutSeg): void {
    if (seg.acked) return;
    seg.acked = true;
    this.#giveBack(seg);
    this.unacked--;
    this.unackedBytes -= seg.len;
    this.delivered += seg.len;
    if (seg.lost) {
      seg.lost = false;
      this.lostCount--;
    }
  }

  #giveBack(seg: OutSeg): void {
    const pool = seg.pool;
    if (!pool) return;
    seg.pool = null;
    pool.give(seg.data);
  }

  #trim(): void {
    while (this.#head < this.#sendBuffer.length && this.#sendBuffer[this.#head]!.acked) this.#head++;
    if (this.#head === this.#sendBuffer.length) {
      this.#sendBuffer.length = 0;
      this.#head = 0;
      this.nextResendAt = Number.POSITIVE_INFINITY;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#sendBuffer.length) {
      this.#sendBuffer = this.#sendBuffer.slice(this.#head);
      this.#head = 0;
    }
  }
}
