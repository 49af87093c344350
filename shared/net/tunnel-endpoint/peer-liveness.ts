/**
 * One peer's liveness as its tunnel endpoint sees it: an ICMP echo prober inside the WireGuard session, from the
 * endpoint's address to the peer's (shared/net/ip/echo-prober.ts: the RTT, the last answered probe), and when
 * probes are due and whether they are answered (liveness.ts). The endpoint makes one per peer (TunnelPeer.liveness)
 * and hands it the echo replies (echo-answer.ts); the owner decides when to probe (its tick) and reads the verdict.
 */
import type { Clock } from '../../clock.js';
import { EchoProber } from '../ip/echo-prober.js';
import type { Ipv4View } from '../ip/ipv4.js';
import { Liveness, type LivenessPace } from './liveness.js';

export interface PeerLivenessOptions {
  readonly clock: Clock;
  /** The endpoint's address (the probes' source) and the peer's. */
  readonly src: number;
  readonly dst: number;
  readonly pace: LivenessPace;
  /** Sends an inner packet to the peer (its WireGuard session); false when it was dropped. */
  send(packet: Buffer): boolean;
}

export class PeerLiveness {
  readonly prober: EchoProber;
  readonly #state: Liveness;
  readonly #send: (packet: Buffer) => boolean;

  constructor(o: PeerLivenessOptions) {
    this.prober = new EchoProber({ clock: o.clock, src: o.src, dst: o.dst });
    this.#state = new Liveness({ ...o.pace, clock: o.clock });
    this.#send = o.send;
  }

  /** Sends a probe now; false when the peer's session dropped it. */
  probe(): boolean {
    this.#state.sent();
    return this.#send(this.prober.probe());
  }

  /** An ICMP packet to the endpoint: true when it is the reply to one of our probes (taken). */
  answer(ip: Ipv4View): boolean {
    if (!this.prober.onPacket(ip)) return false;
    this.#state.answered();
    return true;
  }

  /** Whether a probe is due now (liveness.ts). */
  due(active: boolean): boolean {
    return this.#state.due(active);
  }

  /** A probe has waited longer than probeMs for its answer. */
  get retrying(): boolean {
    return this.#state.retrying;
  }

  /** The peer never answered, or a probe stayed unanswered for deadMs. */
  get stale(): boolean {
    return this.#state.stale;
  }
}
