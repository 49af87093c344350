/**
 * Which reason a cluster's path details show when its agent is relayed: the agent's own (from its lease,
 * relay/agent-reason.ts) when it reported one, as it knows what the hub cannot see (it sends no UDP at all, its
 * cluster's path value is relay-only, its UDP is blocked, its NAT maps per destination); else the hub's (what
 * the path selector holding the agent's session sees: no candidates, no answer, the direct path went silent).
 * `reasonFrom` says which side it came from. On the direct path there is no reason.
 */

export type ReasonFrom = 'agent' | 'hub';

/** The path details of the hub's report, before the reason is chosen. */
export interface HubPathDetail {
  remote: string | null;
  rttDirectMs: number | null;
  rttRelayedMs: number | null;
  lastSwitch: string | null;
  reason: string | null;
}

export interface ReasonedPathDetail extends HubPathDetail {
  reasonFrom: ReasonFrom | null;
}

const NO_DETAIL: HubPathDetail = {
  remote: null,
  rttDirectMs: null,
  rttRelayedMs: null,
  lastSwitch: null,
  reason: null,
};

/**
 * The details with their reason: `hub` is the hub's details (null when no hub reported any: an agent or hub
 * without disco, or a report gone stale); `agentReason` the agent's last reported reason.
 */
export function withReason(
  view: { readonly connected: boolean; readonly path: string },
  hub: HubPathDetail | null,
  agentReason: string | null,
): ReasonedPathDetail | null {
  if (view.connected && view.path === 'relayed' && agentReason !== null)
    return { ...(hub ?? NO_DETAIL), reason: agentReason, reasonFrom: 'agent' };
  if (!hub) return null;
  return { ...hub, reasonFrom: hub.reason === null ? null : 'hub' };
}
