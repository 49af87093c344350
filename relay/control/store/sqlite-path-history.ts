/**
 * The path history of the SQLite store (path-history-row.ts), run inside the store's transactions: the hub's
 * report with the agent's reason (saveAgentPath), a change of the agent's reason alone (renewLease, on the
 * heartbeat route: its statements are prepared once), and the counts of relayed agents by reason (metrics).
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

function statements(db: Database.Database) {
  return {
    agentReason: db.prepare<[string], { agent_reason: string | null }>(
      'SELECT agent_reason FROM clusters WHERE name = ?',
    ),
    newest: db.prepare<[string], PathHistoryRow>(selectPathHistorySql(q, { newest: true })),
    all: db.prepare<[string], PathHistoryRow>(selectPathHistorySql(q)),
    insert: db.prepare(insertPathChangeSql(q)),
    trim: db.prepare(trimPathHistorySql(q)),
    upsertPath: db.prepare(upsertAgentPathSql(q)),
    reportedPath: db.prepare<[string], ReportedPathRow>(REPORTED_PATH_SQL(q)),
    relayedCounts: db.prepare<[number], RelayedReasonCountRow>(RELAYED_REASON_COUNTS_SQL(q)),
  };
}

/** Each method runs inside the caller's transaction. */
export class SqlitePathHistory {
  readonly #statements: ReturnType<typeof statements>;

  constructor(db: Database.Database) {
    this.#statements = statements(db);
  }

  /** Writes the hub's report and the history entry it makes; nothing for a cluster that does not exist. */
  saveAgentPath(path: AgentPathRecord): void {
    const agentReason = this.#agentReason(path.cluster);
    if (agentReason === undefined) return;
    this.#append(path.cluster, pathChangeOf(path, agentReason, path.lastSwitchAt ?? path.reportedAt));
    this.#statements.upsertPath.run(...agentPathValues(path), path.cluster);
  }

  /**
   * Runs `renew` (the lease's UPDATE, true when it renewed) and records the agent's reason going from the stored
   * one to `after` at `now` when that changes what the cluster's relayed path shows.
   */
  renew(o: { cluster: string; after: string | null; now: number; renew: () => boolean }): boolean {
    const before = this.#agentReason(o.cluster) ?? null;
    if (!o.renew()) return false;
    if (before === o.after) return true;
    const row = this.#statements.reportedPath.get(o.cluster);
    const change = agentReasonChange({ row, agentReason: o.after, now: o.now });
    if (change) this.#append(o.cluster, change);
    return true;
  }

  /** The cluster's entries, newest first. */
  history(cluster: string): PathChange[] {
    return this.#statements.all.all(cluster).map(toPathChange);
  }

  relayedReasonCounts(sinceWall: number): RelayedReasonCount[] {
    return this.#statements.relayedCounts
      .all(sinceWall)
      .map((r) => ({ hubReason: r.hub_reason, agentReason: r.agent_reason, agents: Number(r.n) }));
  }

  /** The cluster's agent_reason, undefined for a cluster that does not exist. */
  #agentReason(cluster: string): string | null | undefined {
    return this.#statements.agentReason.get(cluster)?.agent_reason;
  }

  #append(cluster: string, change: PathChange): void {
    const row = this.#statements.newest.get(cluster);
    const next = nextPathChange(row ? toPathChange(row) : undefined, change);
    if (!next) return;
    this.#statements.insert.run(...pathChangeValues(cluster, next));
    this.#statements.trim.run(cluster, cluster);
  }
}
