/**
 * The agent_paths row (migration 4) of both stores: an agent's path as the hub holding its session last
 * reported it. RTTs are kept in microseconds (integers in either database).
 */
import type { AgentPathRecord } from './types.js';

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

/**
 * A report older than this is ignored (its writer is gone): the hub holding the session rewrites its row at least
 * every PATH_REPORT_REFRESH_MS (relay/control/model/path-reports.ts).
 */
export const PATH_REPORT_STALE_MS = 300_000;

export const AGENT_PATH_COLS =
  'cluster, path, remote, rtt_direct_us, rtt_relayed_us, last_switch_at, reason, reported_at';

const toUs = (ms: number | null): number | null => (ms === null ? null : Math.round(ms * 1000));
const fromUs = (us: number | string | null): number | null => (us === null ? null : Number(us) / 1000);
const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

export function pathOf(v: string): AgentPathRecord['path'] {
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
