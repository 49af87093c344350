/** Small pieces used across pages: error notes, status badges, condition cells, ages. */
import { age, when } from '../lib/format.js';
import type { Cluster, Condition } from '../lib/types.js';

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

export function conditionOf(c: Cluster, type: string): Condition | undefined {
  return c.conditions.find((x) => x.type === type);
}

/** "True · 3 min ago" with the reason and exact time as a tooltip. */
export function ConditionCell({ cond, now }: { cond: Condition | undefined; now: number }) {
  if (!cond) return <span>-</span>;
  return (
    <span title={`${cond.reason}: ${cond.message} (since ${when(cond.lastTransitionTime)})`}>
      <span class={`cond cond-${cond.status.toLowerCase()}`}>{cond.status}</span>{' '}
      <span class="muted">{age(cond.lastTransitionTime, now)}</span>
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

export function PathCell({ c }: { c: Cluster }) {
  const label = c.connected ? c.path : 'none';
  const ms = rttOf(c);
  const rtt = ms !== null ? ` · ${Math.round(ms)} ms` : '';
  const reason = c.connected && c.path === 'relayed' ? c.pathDetail?.reason : null;
  return (
    <span class={`path path-${c.connected ? 'up' : 'down'}`}>
      {label}
      {rtt}
      {reason ? ` · ${reason}` : ''}
    </span>
  );
}
