/** Small pieces used across pages: error notes, status and state badges, paths and their reasons. */

import { formatRtt } from '../../../shared/kit/rtt-text.js';
import { RELAYED_REASON_TEXT } from '../../../shared/net/tunnel-endpoint/relayed-reasons.js';
import { rowState } from '../lib/cluster-sort.js';
import type { Cluster } from '../lib/types.js';

export function ErrorNote({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.toLowerCase()}`}>{status}</span>;
}

/** The cluster's state (Connected / Degraded / Disconnected / Never connected) as a badge; `data-state` for tests. */
export function StateBadge({ state }: { state: string }) {
  const cls = state.toLowerCase().replace(/[^a-z]+/g, '-');
  return (
    <span class={`badge state-${cls}`} data-state={state}>
      {state}
    </span>
  );
}

/**
 * A cluster's one badge in the list: Pending (waiting for an administrator, not an error) and Denied before the live
 * state; `data-state` keeps the live state for tests.
 */
export function ClusterBadge({ c }: { c: Cluster }) {
  if (c.status === 'Accepted') return <StateBadge state={c.state} />;
  const title =
    c.status === 'Pending'
      ? 'waiting for an administrator to accept the agent (Approvals)'
      : 'an administrator denied this cluster: its agent stopped';
  return (
    <span class={`badge state-${c.status.toLowerCase()}`} data-state={rowState(c)} title={title}>
      {c.status}
    </span>
  );
}

const REASON_WORDS = new Map<string, string>(Object.entries(RELAYED_REASON_TEXT));

/** A reason in words, with its stable code as the tooltip (`data-reason` for tests); an unknown code as itself. */
export function ReasonText({ code }: { code: string }) {
  const words = REASON_WORDS.get(code);
  return (
    <span class="reason" title={code} data-reason={code}>
      {words ?? code}
    </span>
  );
}

/** The RTT of the path in use: `rttMs`, else the path detail's figure for that path. */
export function rttOf(c: Cluster): number | null {
  if (!c.connected) return null;
  if (c.rttMs !== null) return c.rttMs;
  const d = c.pathDetail;
  if (!d) return null;
  return c.path === 'direct' ? d.rttDirectMs : c.path === 'relayed' ? d.rttRelayedMs : null;
}

/**
 * The path in use in its own colour (direct, relayed, none), the round trip the hub measured over it (`rttOf`) and,
 * relayed, why, in words with the code as the tooltip.
 */
export function PathCell({ c }: { c: Cluster }) {
  const label = c.connected ? c.path : 'none';
  const ms = rttOf(c);
  const reason = c.connected && c.path === 'relayed' ? c.pathDetail?.reason : null;
  return (
    <span class={`path path-${c.connected ? 'up' : 'down'} path-${label}`} data-path={label}>
      {label}
      {ms !== null && (
        <span title="round trip of the path in use, measured by the hub">{` · ${formatRtt(ms)}`}</span>
      )}
      {reason ? ' · ' : ''}
      {reason ? <ReasonText code={reason} /> : null}
    </span>
  );
}
