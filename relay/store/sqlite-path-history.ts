/**
 * The path history of the SQLite store (path-history-row.ts), run inside the store's transactions: the hub's
 * report with the agent's reason (saveAgentPath), a change of the agent's reason alone (renewLease), and the
 * counts of relayed agents by reason (metrics).
 */
import type Database from 'better-sqlite3';
import { agentPathValues, upsertAgentPathSql } from './agent-path-row.js';
import {
  agentReasonChange,
  insertPathChangeSql,
  nextPathChange,
  type PathHistoryRow,
  pathChangeOf,
  pathChangeValues,
  RELAYED_REASON_COUNTS_SQL,
  REPORTED_PATH_SQL,
  type RelayedReasonCountRow,
  type ReportedPathRow,
  selectPathHistorySql,
  toPathChange,
  trimPathHistorySql,
} from './path-history-row.js';
import type { AgentPathRecord, PathChange, RelayedReasonCount } from './types.js';

const q = () => '?';

function appendPathChange(db: Database.Database, cluster: string, change: PathChange): void {
  const row = db.prepare<[string], PathHistoryRow>(selectPathHistorySql(q, { newest: true })).get(cluster);
  const next = nextPathChange(row ? toPathChange(row) : undefined, change);
  if (!next) return;
  db.prepare(insertPathChangeSql(q)).run(...pathChangeValues(cluster, next));
  db.prepare(trimPathHistorySql(q)).run(cluster, cluster);
}

/** The cluster's agent_reason, undefined for a cluster that does not exist. */
function agentReasonOf(db: Database.Database, cluster: string): string | null | undefined {
  return db
    .prepare<[string], { agent_reason: string | null }>('SELECT agent_reason FROM clusters WHERE name = ?')
    .get(cluster)?.agent_reason;
}

/** Writes the hub's report and the history entry it makes; nothing for a cluster that does not exist. */
export function saveAgentPathInTx(db: Database.Database, path: AgentPathRecord): void {
  const agentReason = agentReasonOf(db, path.cluster);
  if (agentReason === undefined) return;
  appendPathChange(db, path.cluster, pathChangeOf(path, agentReason, path.lastSwitchAt ?? path.reportedAt));
  db.prepare(upsertAgentPathSql(q)).run(...agentPathValues(path), path.cluster);
}

/**
 * Runs `renew` (the lease's UPDATE, true when it renewed) and records the agent's reason going from the stored
 * one to `after` at `now` when that changes what the cluster's relayed path shows.
 */
export function renewWithReasonInTx(
  db: Database.Database,
  o: { cluster: string; after: string | null; now: number; renew: () => boolean },
): boolean {
  const before = agentReasonOf(db, o.cluster) ?? null;
  if (!o.renew()) return false;
  if (before === o.after) return true;
  const row = db.prepare<[string], ReportedPathRow>(REPORTED_PATH_SQL(q)).get(o.cluster);
  const change = agentReasonChange({ row, agentReason: o.after, now: o.now });
  if (change) appendPathChange(db, o.cluster, change);
  return true;
}

export function relayedReasonCounts(db: Database.Database, sinceWall: number): RelayedReasonCount[] {
  return db
    .prepare<[number], RelayedReasonCountRow>(RELAYED_REASON_COUNTS_SQL(q))
    .all(sinceWall)
    .map((r) => ({ hubReason: r.hub_reason, agentReason: r.agent_reason, agents: Number(r.n) }));
}
