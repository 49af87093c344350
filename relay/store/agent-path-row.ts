/**
 * The agent_paths row (migration 4) of both stores: an agent's path as the hub holding its session last
 * reported it. RTTs are kept in microseconds (integers in either database).
 */
import type { AgentPathRecord, PathChange } from './types.js';

export interface AgentPathRow {
  cluster: string;
  path: string;
  remote: string | null;
  rtt_direct_us: number | string | null;
  rtt_relayed_us: number | string | null;
  last_switch_at: number | string | null;
  reason: string | null;
  reported_at: number | string;
}

export const AGENT_PATH_COLS =
  'cluster, path, remote, rtt_direct_us, rtt_relayed_us, last_switch_at, reason, reported_at';

const toUs = (ms: number | null): number | null => (ms === null ? null : Math.round(ms * 1000));
const fromUs = (us: number | string | null): number | null => (us === null ? null : Number(us) / 1000);
const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

function pathOf(v: string): AgentPathRecord['path'] {
  return v === 'direct' || v === 'relayed' ? v : 'none';
}

/** The row's values in AGENT_PATH_COLS order. */
export function agentPathValues(p: AgentPathRecord): Array<string | number | null> {
  return [
    p.cluster,
    p.path,
    p.remote,
    toUs(p.rttDirectMs),
    toUs(p.rttRelayedMs),
    p.lastSwitchAt,
    p.reason,
    p.reportedAt,
  ];
}

export function toAgentPath(r: AgentPathRow): AgentPathRecord {
  return {
    cluster: r.cluster,
    path: pathOf(r.path),
    remote: r.remote,
    rttDirectMs: fromUs(r.rtt_direct_us),
    rttRelayedMs: fromUs(r.rtt_relayed_us),
    lastSwitchAt: num(r.last_switch_at),
    reason: r.reason,
    reportedAt: Number(r.reported_at),
  };
}

/** Upsert of one row, for a cluster that exists (none: nothing written). `p(i)` spells the i-th parameter. */
export function upsertAgentPathSql(p: (i: number) => string): string {
  const params = Array.from({ length: 8 }, (_, i) => p(i + 1)).join(', ');
  const set = AGENT_PATH_COLS.split(', ')
    .slice(1)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  return `INSERT INTO agent_paths (${AGENT_PATH_COLS})
    SELECT ${params} FROM clusters WHERE name = ${p(1)}
    ON CONFLICT (cluster) DO UPDATE SET ${set}`;
}

/** Path changes kept per cluster (the oldest is dropped past it). */
export const PATH_HISTORY_MAX = 20;

/**
 * Appends `p` to the cluster's path history when its path, remote or reason differs from the row now in
 * agent_paths (run before the upsert); nothing for a cluster that does not exist. Values: pathHistoryValues.
 */
export function appendPathHistorySql(p: (i: number) => string): string {
  return `INSERT INTO agent_path_history (cluster, at, path, remote, reason)
    SELECT ${p(1)}, CAST(${p(2)} AS BIGINT), ${p(3)}, ${p(4)}, ${p(5)}
    WHERE EXISTS (SELECT 1 FROM clusters WHERE name = ${p(6)})
      AND NOT EXISTS (SELECT 1 FROM agent_paths WHERE cluster = ${p(7)} AND path = ${p(8)}
        AND remote IS NOT DISTINCT FROM ${p(9)} AND reason IS NOT DISTINCT FROM ${p(10)})`;
}

export function pathHistoryValues(p: AgentPathRecord): Array<string | number | null> {
  const at = p.lastSwitchAt ?? p.reportedAt;
  return [p.cluster, at, p.path, p.remote, p.reason, p.cluster, p.cluster, p.path, p.remote, p.reason];
}

/** Drops all but the newest PATH_HISTORY_MAX entries of cluster `p(1)`. */
export function trimPathHistorySql(p: (i: number) => string): string {
  return `DELETE FROM agent_path_history WHERE cluster = ${p(1)} AND at < (
    SELECT at FROM agent_path_history WHERE cluster = ${p(2)} ORDER BY at DESC LIMIT 1 OFFSET ${PATH_HISTORY_MAX - 1})`;
}

export interface PathHistoryRow {
  at: number | string;
  path: string;
  remote: string | null;
  reason: string | null;
}

export const PATH_HISTORY_COLS = 'at, path, remote, reason';

export function toPathChange(r: PathHistoryRow): PathChange {
  return { at: Number(r.at), path: pathOf(r.path), remote: r.remote, reason: r.reason };
}
