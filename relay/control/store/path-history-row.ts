/**
 * The agent_path_history rows (migrations 6 and 8) of both stores: each cluster's path changes as its path details
 * showed them, the newest PATH_HISTORY_MAX kept. An entry is the hub's report (path, direct remote) with the reason
 * chosen as the details choose it (relay/control/store/path-reason.ts: the agent's own while relayed, else the hub's) and who
 * reported it. One is appended when any of these differs from the cluster's newest entry: when the hub's report
 * changes (saveAgentPath), and when only the agent's reason changes while its fresh report says relayed
 * (renewLease, on whichever replica took the lease). Entries' times only go forward, so the newest is the last
 * one written.
 */

import { PATH_REPORT_STALE_MS, pathOf } from './agent-path-row.js';
import { type ReasonFrom, shownReason } from './path-reason.js';
import type { AgentPathRecord, PathChange } from './types.js';

/** Path changes kept per cluster (the oldest is dropped past it). */
export const PATH_HISTORY_MAX = 20;

export const PATH_HISTORY_COLS = 'at, path, remote, reason, reason_from';

export interface PathHistoryRow {
  at: number | string;
  path: string;
  remote: string | null;
  reason: string | null;
  reason_from: string | null;
}

function reasonFromOf(v: string | null): ReasonFrom | null {
  return v === 'agent' || v === 'hub' ? v : null;
}

export function toPathChange(r: PathHistoryRow): PathChange {
  return {
    at: Number(r.at),
    path: pathOf(r.path),
    remote: r.remote,
    reason: r.reason,
    reasonFrom: reasonFromOf(r.reason_from),
  };
}

/** The entries of cluster `p(1)`, newest first (`newest`: that one alone). */
export function selectPathHistorySql(p: (i: number) => string, opts: { newest?: boolean } = {}): string {
  return `SELECT ${PATH_HISTORY_COLS} FROM agent_path_history WHERE cluster = ${p(1)}
    ORDER BY at DESC${opts.newest ? ' LIMIT 1' : ''}`;
}

/** Inserts one entry; values: pathChangeValues. */
export function insertPathChangeSql(p: (i: number) => string): string {
  return `INSERT INTO agent_path_history (cluster, ${PATH_HISTORY_COLS})
    VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)})`;
}

export function pathChangeValues(cluster: string, c: PathChange): Array<string | number | null> {
  return [cluster, c.at, c.path, c.remote, c.reason, c.reasonFrom];
}

/** Drops all but the newest PATH_HISTORY_MAX entries of cluster `p(1)`. */
export function trimPathHistorySql(p: (i: number) => string): string {
  return `DELETE FROM agent_path_history WHERE cluster = ${p(1)} AND at < (
    SELECT at FROM agent_path_history WHERE cluster = ${p(2)} ORDER BY at DESC LIMIT 1 OFFSET ${PATH_HISTORY_MAX - 1})`;
}

/** The entry for the hub's report `hub` with the agent's reason `agentReason` (as the path details show them). */
export function pathChangeOf(
  hub: Pick<AgentPathRecord, 'path' | 'remote' | 'reason'>,
  agentReason: string | null,
  at: number,
): PathChange {
  const shown = shownReason({ relayed: hub.path === 'relayed', hubReason: hub.reason, agentReason });
  return { at, path: hub.path, remote: hub.remote, ...shown };
}

/**
 * The entry to append after `newest` (the cluster's newest entry, if any), or null when nothing changed; its time
 * is after the newest's.
 */
export function nextPathChange(newest: PathChange | undefined, change: PathChange): PathChange | null {
  if (!newest) return change;
  const same =
    newest.path === change.path &&
    newest.remote === change.remote &&
    newest.reason === change.reason &&
    newest.reasonFrom === change.reasonFrom;
  return same ? null : { ...change, at: Math.max(change.at, newest.at + 1) };
}

/** The cluster's hub report with the reporting time, as renewLease reads it. */
export const REPORTED_PATH_SQL = (p: (i: number) => string) =>
  `SELECT path, remote, reason, reported_at FROM agent_paths WHERE cluster = ${p(1)}`;

export interface ReportedPathRow {
  path: string;
  remote: string | null;
  reason: string | null;
  reported_at: number | string;
}

/**
 * The entry for the agent's reason `agentReason` (just changed) at `now`: only while the hub's report (`row`,
 * fresh) says relayed, as the agent's reason shows nowhere else; null otherwise.
 */
export function agentReasonChange(o: {
  row: ReportedPathRow | undefined;
  agentReason: string | null;
  now: number;
}): PathChange | null {
  const { row } = o;
  if (row?.path !== 'relayed') return null;
  if (o.now - Number(row.reported_at) >= PATH_REPORT_STALE_MS) return null;
  return pathChangeOf({ path: 'relayed', remote: row.remote, reason: row.reason }, o.agentReason, o.now);
}

/** Agents relayed now per hub reason and agent reason (fresh reports since `p(1)`), for the metrics. */
export const RELAYED_REASON_COUNTS_SQL = (p: (i: number) => string) =>
  `SELECT p.reason AS hub_reason, c.agent_reason, COUNT(*) AS n
    FROM agent_paths p JOIN clusters c ON c.name = p.cluster
    WHERE p.path = 'relayed' AND p.reported_at >= ${p(1)} AND c.public_key IS NOT NULL
    GROUP BY p.reason, c.agent_reason`;

export interface RelayedReasonCountRow {
  hub_reason: string | null;
  agent_reason: string | null;
  n: number | string;
}
