/**
 * Which reason a cluster's path details show when its agent is relayed: the agent's own (from its lease,
 * relay/control/model/agent-reason.ts) when it reported one, as it knows what the hub cannot see (it sends no UDP at all, its
 * cluster's path value is relay-only, its UDP is blocked, its NAT maps per destination); else the hub's (what
 * the path selector holding the agent's session sees: no candidates, no answer, the direct path went silent).
 * `reasonFrom` says which side it came from. On the direct path there is no reason. The path history and the
 * metrics follow the same precedence (shownReason).
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

/** The reason shown and who reported it (null, null: none). */
export interface ShownReason {
  reason: string | null;
  reasonFrom: ReasonFrom | null;
}

/**
 * The one precedence every view of an agent's path follows (the cluster's details, its path history, the
 * metrics): while `relayed`, the agent's reason when it reported one; else the hub's (none while direct).
 */
export function shownReason(o: {
  readonly relayed: boolean;
  readonly hubReason: string | null;
  readonly agentReason: string | null;
}): ShownReason {
  if (o.relayed && o.agentReason !== null) return { reason: o.agentReason, reasonFrom: 'agent' };
  return { reason: o.hubReason, reasonFrom: o.hubReason === null ? null : 'hub' };
}

/**
 * The details with their reason: `hub` is the hub's details (null when no hub reported any: an agent or hub
 * without disco, or a report gone stale); `agentReason` the agent's last reported reason.
 */
export function withReason(
  view: { readonly connected: boolean; readonly path: string },
  hub: HubPathDetail | null,
  agentReason: string | null,
): ReasonedPathDetail | null {
  const relayed = view.connected && view.path === 'relayed';
  const shown = shownReason({ relayed, hubReason: hub?.reason ?? null, agentReason });
  if (shown.reasonFrom === 'agent') return { ...(hub ?? NO_DETAIL), ...shown };
  return hub ? { ...hub, ...shown } : null;
}
