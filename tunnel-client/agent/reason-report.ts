/**
 * What the agent tells the relay of its path with its lease renewals (`relayedReason`, docs/API.md): why its
 * traffic is relayed when only the agent can know it (AGENT_REASONS: --egress 443-only, the path value
 * relay-only, UDP blocked, no STUN answer, a NAT mapping per destination), else null. Sent only to a relay
 * whose last lease answer said it takes the field (an older relay refuses unknown fields, and the lease with
 * them); a change is due at once (the agent renews early, LeaseLoop.renewNow).
 */
import type { LeaseReply } from '../../shared/api/lease.js';
import { type AgentReason, isAgentReason } from '../../shared/net/tunnel-endpoint/relayed-reasons.js';
import type { ConnectionStats } from './types.js';

/** The reason to report for these figures: an agent-only reason while connected and not direct. */
export function agentReasonOf(stats: ConnectionStats): AgentReason | null {
  const reason = stats.connected && stats.path !== 'direct' ? stats.pathDetail?.reason : null;
  return reason && isAgentReason(reason) ? reason : null;
}

/** The lease body's part this report fills in (LeaseBody's `relayedReason`). */
export interface ReasonBody {
  readonly relayedReason?: AgentReason | null;
}

export class ReasonReport {
  readonly #stats: () => ConnectionStats;
  #relayTakesIt = false;
  /** What the relay holds since the last renewal; undefined for a relay that does not take it. */
  #sent: AgentReason | null | undefined;

  /** `stats`: the data plane's figures now. */
  constructor(stats: () => ConnectionStats) {
    this.#stats = stats;
  }

  /** The lease body's part: `relayedReason` for a relay that takes it, nothing otherwise. */
  body(): ReasonBody {
    return this.#relayTakesIt ? { relayedReason: agentReasonOf(this.#stats()) } : {};
  }

  /** A renewal carrying `body` succeeded with `res` (a relay that takes the field stores an absent one as null). */
  renewed(body: ReasonBody, res: LeaseReply): void {
    this.#relayTakesIt = res.takesRelayedReason === true;
    this.#sent = this.#relayTakesIt ? (body.relayedReason ?? null) : undefined;
  }

  /**
   * The relay takes the reason and has not got the current one. Never while the relay connection is down: a
   * renewal then would only fail (and log an outage the connection already logged); the reason is what it was
   * once the connection is back, or due then.
   */
  due(): boolean {
    const stats = this.#stats();
    return this.#relayTakesIt && stats.connected && this.#sent !== agentReasonOf(stats);
  }
}
