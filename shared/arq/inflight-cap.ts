/**
 * A cap on the bytes in flight, from the path's measured delivery rate and minimum RTT (the estimate BBR
 * builds its window from): cap = rate x (2 x minRtt + queueTargetMs), never below `floorBytes`.
 *
 * Why: on a path that queues instead of dropping (the relay path runs over TCP), a loss-based window grows
 * without bound and every byte in flight waits in some buffer ahead of the next stream's reply. Bytes in
 * flight beyond rate x RTT add only waiting, not throughput. The cap keeps about one minimum RTT plus
 * queueTargetMs of data queued, so a new stream's first bytes wait at most about that long. The factor 2 on
 * the RTT term lets the flight double per round while the rate keeps growing (a slow start of its own), and
 * keeps a long path's window near twice its bandwidth-delay product.
 *
 * Samples: the minimum RTT over the last 5-10 s (two buckets), and the delivery rate over the last ROUNDS
 * round trips (bytes acknowledged / time; a round ends when the cumulative ack passes the sn that was next when
 * it began). An average over several rounds, not a maximum of per-ack samples: acks that arrive in bursts (a
 * descheduled process, batched socket reads) make single samples several times too high.
 *
 * Where it settles: if the cap is what limits the flow, the rate is cap / RTT, so the cap grows while the RTT
 * stays below 2 x minRtt + queueTargetMs and shrinks above it: the queue in front of the path is held near
 * queueTargetMs (plus one minimum RTT).
 */
import { seqDiff } from './segment.js';

export class InflightCap {
  readonly #targetMs: number;
  readonly #floor: number;
  #cap = Number.POSITIVE_INFINITY;
  // min RTT, windowed
  #minCur = Number.POSITIVE_INFINITY;
  #minPrev = Number.POSITIVE_INFINITY;
  #bucketAt = Number.NEGATIVE_INFINITY;
  // rounds: (time, delivered bytes) at each of the last ROUNDS + 1 round boundaries
  #roundEnd = -1;
  readonly #roundTimes: number[] = [];
  readonly #delivered: number[] = [];
  #rate = 0;

  /** `queueTargetMs` 0 disables the cap. */
  constructor(queueTargetMs: number, floorBytes: number) {
    this.#targetMs = queueTargetMs;
    this.#floor = floorBytes;
  }

  get enabled(): boolean {
    return this.#targetMs > 0;
  }

  /** Largest number of unacknowledged bytes allowed now (Infinity while disabled or before any sample). */
  get bytes(): number {
    return this.#cap;
  }

  /** Smallest RTT (ms) of the last 5-10 s; Infinity before the first sample. */
  get minRtt(): number {
    return Math.min(this.#minCur, this.#minPrev);
  }

  /** Delivery rate (bytes/ms) over the last rounds; 0 until two rounds ended. */
  get rate(): number {
    return this.#rate;
  }

  onRttSample(rttMs: number, now: number): void {
    if (!this.enabled) return;
    if (now - this.#bucketAt >= MIN_RTT_BUCKET_MS) {
      this.#minPrev = this.#minCur;
      this.#minCur = Number.POSITIVE_INFINITY;
      this.#bucketAt = now;
    }
    if (rttMs < this.#minCur) this.#minCur = rttMs;
  }

  /**
   * The cumulative ack moved to `una` at `now`, with `delivered` bytes acknowledged in total so far; `sndNxt`
   * is the next sn to send. Ends the round if it is over and recomputes the cap.
   */
  onAdvance(una: number, sndNxt: number, delivered: number, now: number): void {
    if (!this.enabled) return;
    if (this.#roundEnd >= 0 && seqDiff(una, this.#roundEnd) < 0) return;
    this.#roundEnd = sndNxt;
    this.#roundTimes.push(now);
    this.#delivered.push(delivered);
    if (this.#roundTimes.length > ROUNDS + 1) {
      this.#roundTimes.shift();
      this.#delivered.shift();
    }
    const span = now - this.#roundTimes[0]!;
    if (this.#roundTimes.length < 3 || span <= 0) return;
    this.#rate = (delivered - this.#delivered[0]!) / span;
    const minRtt = this.minRtt;
    if (Number.isFinite(minRtt))
      this.#cap = Math.max(this.#floor, this.#rate * (2 * minRtt + this.#targetMs));
  }
}

/** Round trips the delivery rate is averaged over. */
const ROUNDS = 4;
/** The minimum RTT is the smaller of the current and the previous bucket of this length. */
const MIN_RTT_BUCKET_MS = 5_000;
