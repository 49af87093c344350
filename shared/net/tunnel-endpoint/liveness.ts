/**
 * When a tunnel endpoint probes a peer (ICMP echo inside the WireGuard session, peer-liveness.ts), and whether the
 * peer still answers; the agent session paces its probes of the hub with it. While the tunnel carries application traffic the session probes every `probeMs` (2 s); idle, at
 * keepalive pace (`idleProbeMs`, 25 s), so an idle agent costs the relay a few packets a minute. A probe
 * left unanswered for `probeMs` is retried every `probeMs` whatever the pace (the caller also wakes the
 * path selector then: the path in use may have gone silent), and the hub counts as gone once a probe stayed
 * unanswered for `deadMs` (6 s). State only: the session sends the probes and calls in.
 */
import type { Clock } from '../../clock.js';

export const DEFAULT_IDLE_PROBE_INTERVAL_MS = 25_000;

/** The probe pace and the dead interval (the endpoint's `liveness` option). */
export interface LivenessPace {
  /** Probe pace while the tunnel carries traffic, and the retry pace of an unanswered probe. */
  readonly probeMs: number;
  /** Probe pace while idle. */
  readonly idleProbeMs: number;
  /** A probe unanswered this long: the hub is gone. */
  readonly deadMs: number;
}

export interface LivenessOptions extends LivenessPace {
  readonly clock: Clock;
}

export class Liveness {
  readonly #options: LivenessOptions;
  #lastProbeAt = Number.NEGATIVE_INFINITY;
  /** When the oldest probe not answered since was sent; null when every probe was answered. */
  #unansweredSince: number | null = null;
  #answeredOnce = false;

  constructor(o: LivenessOptions) {
    this.#options = o;
  }

  /** Whether a probe is due now: active traffic, an unanswered probe, or the idle pace elapsed. */
  due(active: boolean): boolean {
    const since = this.#options.clock.now() - this.#lastProbeAt;
    if (this.retrying || active) return since >= this.#options.probeMs;
    return since >= this.#options.idleProbeMs;
  }

  /** A probe was sent now. */
  sent(): void {
    const now = this.#options.clock.now();
    this.#lastProbeAt = now;
    this.#unansweredSince ??= now;
  }

  /** A reply to one of our probes arrived. */
  answered(): void {
    this.#answeredOnce = true;
    this.#unansweredSince = null;
  }

  /** A probe has waited longer than probeMs for its answer. */
  get retrying(): boolean {
    const since = this.#unansweredSince;
    return since !== null && this.#options.clock.now() - since >= this.#options.probeMs;
  }

  /** The hub never answered, or a probe stayed unanswered for deadMs. */
  get stale(): boolean {
    const since = this.#unansweredSince;
    return (
      !this.#answeredOnce || (since !== null && this.#options.clock.now() - since >= this.#options.deadMs)
    );
  }
}
