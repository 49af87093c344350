/**
 * `tunnel_relay_agents_relayed`: agents relayed now, by the reason their cluster's path details show and who
 * reported it (relay/control/store/path-reason.ts), counted from the reports in the store (fresh ones: PATH_REPORT_STALE_MS), so
 * every replica sharing a store reports the whole fleet's. The label set is fixed: `from` = agent with `reason` =
 * an agent reason (AGENT_REASONS), `from` = hub with any relayed reason (RELAYED_REASON_TEXT), `other` for a code
 * this relay does not know (a newer replica's or agent's), and `reason` = none with `from` = none for an agent
 * relayed with no reason (a hub without disco). Every series is exported, zeros included.
 */

import { AGENT_REASONS, RELAYED_REASON_TEXT } from '../../../shared/net/tunnel-endpoint/relayed-reasons.js';
import type { Labels } from '../../ops/metrics.js';
import { shownReason } from '../store/path-reason.js';
import type { RelayedReasonCount } from '../store/types.js';

export const AGENTS_RELAYED_METRIC = 'tunnel_relay_agents_relayed';

const LABELS: Readonly<Record<'agent' | 'hub', readonly string[]>> = {
  agent: [...AGENT_REASONS, 'other'],
  hub: [...Object.keys(RELAYED_REASON_TEXT), 'other'],
};

const key = (l: Labels) => `${l.reason} ${l.from}`;

/** The label pair of one count, folded into the fixed set. */
function labelsOf(c: RelayedReasonCount): Labels {
  const shown = shownReason({ relayed: true, hubReason: c.hubReason, agentReason: c.agentReason });
  if (shown.reason === null || shown.reasonFrom === null) return { reason: 'none', from: 'none' };
  const known = LABELS[shown.reasonFrom].includes(shown.reason);
  return { reason: known ? shown.reason : 'other', from: shown.reasonFrom };
}

/** The gauge's samples for the store's counts (Store.relayedReasonCounts). */
export function agentsRelayedSamples(counts: readonly RelayedReasonCount[]): Array<[Labels, number]> {
  const all: Labels[] = [
    ...(['agent', 'hub'] as const).flatMap((from) => LABELS[from].map((reason) => ({ reason, from }))),
    { reason: 'none', from: 'none' },
  ];
  const sums = new Map(all.map((l) => [key(l), 0]));
  for (const c of counts) {
    const k = key(labelsOf(c));
    sums.set(k, (sums.get(k) ?? 0) + c.agents);
  }
  return all.map((l) => [l, sums.get(key(l)) ?? 0]);
}
