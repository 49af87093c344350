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
 *
 * Draining (BBR's ProbeRTT): a flow the cap limits keeps that queue standing, so its RTT samples are all
 * about 2 x minRtt + queueTargetMs. Once the older minimum ages out, the larger one replaces it and the cap,
 * and the queue with it, doubles every 5-10 s of a long transfer. So when a minimum-RTT bucket ends whose
 * minimum stood more than queueTargetMs / 2 above the bucket's before it (a queue stood all through it), the
 * cap lets one segment be in flight at a time for two RTTs (at least DRAIN_MIN_MS, at most DRAIN_MAX_MS;
 * below the floor, which is 4 segments: 4 relayed 64 KB segments are themselves a queue of several ms): the
 * queue empties and the new bucket holds a sample of the path without it. The rate is not sampled meanwhile
 * (it would measure the drain); afterwards the cap is the rate before it x (2 x the new minRtt +
 * queueTargetMs). Under a standing queue that is a drain every other bucket, 10 s: 2 x RTT / 10 s of the
 * rate, 0.2 % at a 10 ms RTT. A flow whose RTT stays at the path's (a long path the cap does not hold back,
 * an interactive one) is never drained.
 */
import { seqDiff } from './segment.js';

export class InflightCap {
  #targetMs: number;
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
  /** One segment at a time until then (monotonic ms; see Draining above). */
  #drainUntil = Number.NEGATIVE_INFINITY;

  /** `queueTargetMs` 0 disables the cap. */
  constructor(queueTargetMs: number, floorBytes: number) {
    this.#targetMs = queueTargetMs;
    this.#floor = floorBytes;
  }

  get enabled(): boolean {
    return this.#targetMs > 0;
  }

  get targetMs(): number {
    return this.#targetMs;
  }

  /**
   * A new queue target, from now on: the cap is recomputed at once from the samples so far. 0 turns the cap
   * off (no samples are taken while it is off).
   */
  setTarget(queueTargetMs: number): void {
    this.#targetMs = queueTargetMs;
    if (!this.enabled) this.#cap = Number.POSITIVE_INFINITY;
    else if (this.#rate > 0 && !Number.isFinite(this.#drainUntil)) this.#setCap();
  }

  /**
   * Largest number of unacknowledged bytes allowed now (Infinity while disabled or before any sample; 1 while
   * draining: a segment may go only when none is in flight).
   */
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

  /** One segment at a time now, so the queue in front of the path empties (see Draining above). */
  draining(now: number): boolean {
    return now < this.#drainUntil;
  }

  onRttSample(rttMs: number, now: number): void {
    if (!this.enabled) return;
    if (now - this.#bucketAt >= MIN_RTT_BUCKET_MS) {
      const queued = this.#minCur > this.#minPrev + this.#targetMs / 2;
      this.#minPrev = this.#minCur;
      this.#minCur = Number.POSITIVE_INFINITY;
      this.#bucketAt = now;
      if (queued && Number.isFinite(this.#cap)) {
        this.#drainUntil = now + Math.min(DRAIN_MAX_MS, Math.max(DRAIN_MIN_MS, 2 * rttMs));
        this.#cap = 1;
      }
    }
    if (rttMs < this.#minCur) this.#minCur = rttMs;
  }

  /**
   * The cumulative ack moved to `una` at `now`, with `delivered` bytes acknowledged in total so far; `sndNxt`
   * is the next sn to send. Ends the round if it is over and recomputes the cap.
   */
  onAdvance(una: number, sndNxt: number, delivered: number, now: number): void {
    if (!this.enabled || this.draining(now)) return;
    if (this.#drainUntil > Number.NEGATIVE_INFINITY) this.#endDrain();
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
    this.#setCap();
  }

  #setCap(): void {
    const minRtt = this.minRtt;
    if (Number.isFinite(minRtt))
      this.#cap = Math.max(this.#floor, this.#rate * (2 * minRtt + this.#targetMs));
  }

  /** The drain is over: the cap from the rate before it, rounds measured afresh from here. */
  #endDrain(): void {
    this.#drainUntil = Number.NEGATIVE_INFINITY;
    this.#roundEnd = -1;
    this.#roundTimes.length = 0;
    this.#delivered.length = 0;
    this.#setCap();
  }
}

/** Round trips the delivery rate is averaged over. */
const ROUNDS = 4;
/** The minimum RTT is the smaller of the current and the previous bucket of this length. */
const MIN_RTT_BUCKET_MS = 5_000;
/** A drain lasts two RTTs, within these bounds (ms). */
const DRAIN_MIN_MS = 5;
const DRAIN_MAX_MS = 200;
