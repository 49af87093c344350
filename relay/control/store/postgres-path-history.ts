/**
 * The path history of the PostgreSQL store (path-history-row.ts), in transactions that first lock the cluster's
 * row, so a hub's report written by one replica and a lease renewed by another append their entries one after the
 * other (each against the newest entry the other left).
 */
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
import type { Tx } from './postgres-tx.js';
import type { AgentPathRecord, PathChange, RelayedReasonCount } from './types.js';

const d = (i: number) => `$${i}`;

async function appendPathChange(tx: Tx, cluster: string, change: PathChange): Promise<void> {
  const row = await tx.one<PathHistoryRow>(selectPathHistorySql(d, { newest: true }), [cluster]);
  const next = nextPathChange(row ? toPathChange(row) : undefined, change);
  if (!next) return;
  await tx.run(insertPathChangeSql(d), pathChangeValues(cluster, next));
  await tx.run(trimPathHistorySql(d), [cluster, cluster]);
}

/** The cluster's agent_reason with its row locked; undefined for a cluster that does not exist. */
async function lockedAgentReason(tx: Tx, cluster: string): Promise<string | null | undefined> {
  const r = await tx.one<{ agent_reason: string | null }>(
    'SELECT agent_reason FROM clusters WHERE name = $1 FOR UPDATE',
    [cluster],
  );
  return r ? r.agent_reason : undefined;
}

/** Writes the hub's report and the history entry it makes; nothing for a cluster that does not exist. */
export async function saveAgentPathPg(tx: Tx, path: AgentPathRecord): Promise<void> {
  const agentReason = await lockedAgentReason(tx, path.cluster);
  if (agentReason === undefined) return;
  await appendPathChange(
    tx,
    path.cluster,
    pathChangeOf(path, agentReason, path.lastSwitchAt ?? path.reportedAt),
  );
  await tx.run(upsertAgentPathSql(d), agentPathValues(path));
}

/**
 * The renewal's UPDATE, which also returns the agent's reason it replaced (`before`; no row: not renewed).
 * Parameters: now, grace, claims, agentVersion, cluster, agentReason.
 */
export const RENEW_SQL = `WITH prev AS (SELECT agent_reason FROM clusters WHERE name = $5)
  UPDATE clusters SET lease_renew_at = $1,
      available_since = CASE WHEN lease_renew_at IS NULL OR available_since IS NULL
        OR $1 >= lease_renew_at + $2 THEN $1 ELSE available_since END,
      claims = COALESCE($3, claims), agent_version = COALESCE($4, agent_version), agent_reason = $6
    WHERE name = $5 AND public_key IS NOT NULL
    RETURNING (SELECT agent_reason FROM prev) AS before`;

/** After a renewal changed the agent's reason: the entry it makes, from the reason the cluster holds now. */
export async function noteAgentReasonPg(tx: Tx, o: { cluster: string; now: number }): Promise<void> {
  const agentReason = await lockedAgentReason(tx, o.cluster);
  if (agentReason === undefined) return;
  const row = await tx.one<ReportedPathRow>(REPORTED_PATH_SQL(d), [o.cluster]);
  const change = agentReasonChange({ row, agentReason, now: o.now });
  if (change) await appendPathChange(tx, o.cluster, change);
}

export async function relayedReasonCountsPg(tx: Tx, sinceWall: number): Promise<RelayedReasonCount[]> {
  const rows = await tx.all<RelayedReasonCountRow>(RELAYED_REASON_COUNTS_SQL(d), [sinceWall]);
  return rows.map((r) => ({ hubReason: r.hub_reason, agentReason: r.agent_reason, agents: Number(r.n) }));
}
