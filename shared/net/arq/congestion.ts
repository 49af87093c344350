/** RTT/RTO estimation (KCP/TCP formulas) and TCP-like congestion control for an ArqSession. */
import { seqDiff } from './segment.js';

export class RttEstimator {
  srtt = 0;
  rttvar = 0;
  rto: number;
  readonly #min: number;
  readonly #max: number;
  readonly #ackDelay: number;

  constructor(initialRto: number, minRto: number, maxRto: number, ackDelay: number) {
    this.rto = initialRto;
    this.#min = minRto;
    this.#max = maxRto;
    this.#ackDelay = ackDelay;
  }

  /** First sample: srtt = rtt, rttvar = rtt/2; then rttvar = (3 rttvar + |rtt - srtt|)/4, srtt = (7 srtt + rtt)/8. */
  sample(rtt: number): void {
    if (this.srtt === 0) {
      this.srtt = Math.max(1, rtt);
      this.rttvar = rtt / 2;
    } else {
      this.rttvar = (3 * this.rttvar + Math.abs(rtt - this.srtt)) / 4;
      this.srtt = Math.max(1, (7 * this.srtt + rtt) / 8);
    }
    const rto = this.srtt + Math.max(this.#ackDelay, 4 * this.rttvar);
    this.rto = Math.min(this.#max, Math.max(this.#min, Math.ceil(rto)));
  }
}

/**
 * Reno-like window in segments: slow start below ssthresh, +1/cwnd per acked segment above it; halved once
 * per recovery window on fast retransmit, down to 2 on a retransmission timeout. Disabled = the send window.
 */
export class Congestion {
  cwnd: number;
  ssthresh: number;
  readonly #enabled: boolean;
  readonly #max: number;
  #inRecovery = false;
  #recoverSn = 0;

  constructor(enabled: boolean, initialCwnd: number, sendWindow: number) {
    this.#enabled = enabled;
    this.#max = sendWindow;
    this.cwnd = enabled ? initialCwnd : sendWindow;
    this.ssthresh = sendWindow;
  }

  /** Segments that may be outstanding. */
  limit(rmtWnd: number): number {
    const lim = Math.min(this.#max, rmtWnd);
    return this.#enabled ? Math.min(lim, Math.max(1, Math.floor(this.cwnd))) : lim;
  }

  /** The cumulative ack moved forward by `n` segments, to `una`. */
  onAdvance(n: number, una: number): void {
    if (this.#inRecovery && seqDiff(una, this.#recoverSn) >= 0) this.#inRecovery = false;
    if (!this.#enabled) return;
    if (this.cwnd < this.ssthresh) this.cwnd += n;
    else this.cwnd += n / this.cwnd;
    if (this.cwnd > this.#max) this.cwnd = this.#max;
  }

  onFastLoss(inFlight: number, sndNxt: number, fastResend: number): void {
    if (this.#inRecovery || !this.#enabled) return;
    this.ssthresh = Math.max(4, Math.floor(inFlight / 2));
    this.cwnd = this.ssthresh + fastResend;
    this.#enter(sndNxt);
  }

  onTimeout(inFlight: number, sndNxt: number): void {
    if (!this.#enabled) return;
    if (!this.#inRecovery) this.ssthresh = Math.max(4, Math.floor(inFlight / 2));
    this.cwnd = 2;
    this.#enter(sndNxt);
  }

  #enter(sndNxt: number): void {
    this.#inRecovery = true;
    this.#recoverSn = sndNxt;
  }
}
