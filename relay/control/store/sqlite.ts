/**
 * SQLite store (better-sqlite3): WAL journal, foreign keys on, migrations on open, every multi-row
 * change in one transaction together with its audit row. `:memory:` gives a private in-memory
 * database for unit tests.
 */

import Database from 'better-sqlite3';
import { TunnelError } from '../../../shared/errors.js';
import { parseDuration } from '../../../shared/kit/duration.js';
import {
  AUDIT_MAX_ROWS,
  AUDIT_RETENTION,
  MAX_PENDING_PER_KEY,
  MAX_PENDING_REGISTRATIONS,
} from '../../ops/config/config-control-limits.js';
import {
  checkKeyCaps,
  ENDED_KEY_RETENTION_MS,
  endedRowsOver,
  type LiveKeyCounts,
  liveKeyCountsSql,
  pruneEndedKeysSql,
  pruneOldestEndedSql,
  revokeClusterKeysSql,
  sqliteArgs,
  sqliteParam,
} from './access-key-caps.js';
import { AGENT_PATH_COLS, type AgentPathRow, toAgentPath } from './agent-path-row.js';
import { agentsOf, type ClusterAgentRecord, clusterAsAgent, primaryAgentOf } from './agent-replicas.js';
import { auditPrune, auditPruneDue, auditUpToSql, pruneAuditSql } from './audit-retention.js';
import { applyMigrations } from './migrations.js';
import { accessKeyPageSql, auditPageSql, clusterPageSql, pageOf } from './page-query.js';
import { type PendingCap, type PendingCounts, pendingCapOf, pendingCountsSql } from './pending-caps.js';
import { CURRENT_PSK_ORDER, type PskState, type PskSummary, pskSummary } from './psk-refusal.js';
import { AddressPool } from './sqlite-addresses.js';
import {
  releaseReplicaAddresses,
  renewReplica,
  replicaByKey,
  replicaRows,
  unjoinReplica,
} from './sqlite-agent-replicas.js';
import { insertPsk, takeInstallLinkInTx } from './sqlite-install-links.js';
import { SqlitePathHistory } from './sqlite-path-history.js';
import { registerInTx } from './sqlite-register.js';
import {
  type AuditRow,
  CLUSTER_COLS,
  type ClusterRow,
  KEY_COLS,
  type KeyRow,
  keyValues,
  toAuditRecord,
  toCluster,
  toKey,
} from './sqlite-rows.js';
import type {
  AccessKeyCursor,
  AccessKeyRecord,
  AgentIdentity,
  AgentPathRecord,
  AuditEntry,
  AuditPageQuery,
  AuditRecord,
  ClusterPageQuery,
  ClusterRecord,
  ClusterStatus,
  ClusterStatusChange,
  CreateKeyOptions,
  LeaseInput,
  NewCluster,
  NewSecret,
  Page,
  PathChange,
  RegisterInput,
  RegisterResult,
  RelayedReasonCount,
  RemoteKeyLoss,
  RevokeKeyResult,
  Store,
  StoreLimits,
  TakeInstallResult,
} from './types.js';

export const DEFAULT_STORE_LIMITS: StoreLimits = {
  maxClusters: 100_000,
  maxAccessKeys: 10_000,
  maxLiveKeysPerMinter: 200,
  maxEndedAccessKeys: 10_000,
  maxAuditRows: AUDIT_MAX_ROWS.default,
  auditRetentionMs: parseDuration(AUDIT_RETENTION.default),
  maxPendingRegistrations: MAX_PENDING_REGISTRATIONS.default,
  maxPendingPerKey: MAX_PENDING_PER_KEY.default,
};

export class SqliteStore implements Store {
  readonly #database: Database.Database;
  readonly #limits: StoreLimits;
  readonly #statements;
  readonly #pool: AddressPool;
  readonly #history: SqlitePathHistory;
  readonly #keyRevoked = new Set<(keyId: string) => void>();
  readonly #auditOverCap = new Set<(keptOverCap: number) => void>();
  #closed = false;

  constructor(path: string, limits: Partial<StoreLimits> = {}) {
    this.#limits = { ...DEFAULT_STORE_LIMITS, ...limits };
    this.#database = new Database(path);
    if (path !== ':memory:') this.#database.pragma('journal_mode = WAL');
    this.#database.pragma('foreign_keys = ON');
    this.#database.pragma('synchronous = NORMAL');
    this.#database.pragma('busy_timeout = 5000');
    applyMigrations(this.#database);
    this.#pool = new AddressPool(this.#database);
    this.#history = new SqlitePathHistory(this.#database);
    const db = this.#database;
    this.#statements = {
      getCluster: db.prepare<[string], ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters WHERE name = ?`),
      clusterByKey: db.prepare<[string], ClusterRow>(
        `SELECT ${CLUSTER_COLS} FROM clusters WHERE public_key = ?`,
      ),
      countClusters: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM clusters'),
      insertAudit: db.prepare(
        'INSERT INTO audit (at, actor, action, target, source, detail) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      pruneAudit: db.prepare(pruneAuditSql(() => '?')),
      auditUpTo: db.prepare<[number], { n: number }>(auditUpToSql(() => '?')),
      pendingCounts: db.prepare<[string], PendingCounts>(pendingCountsSql(() => '?')),
      findAgent: db.prepare<
        [string],
        { id: string; cluster: string; status: string; public_key: string | null }
      >(
        `SELECT a.id, a.cluster, c.status, a.public_key FROM agent_credentials a JOIN clusters c ON c.name = a.cluster
         WHERE a.hash = ? AND a.revoked_at IS NULL`,
      ),
      renew: db.prepare(
        `UPDATE clusters SET lease_renew_at = @now,
           available_since = CASE WHEN lease_renew_at IS NULL OR available_since IS NULL
             OR @now >= lease_renew_at + @grace THEN @now ELSE available_since END,
           claims = COALESCE(@claims, claims), agent_version = COALESCE(@agentVersion, agent_version),
           agent_reason = @agentReason
         WHERE name = @name AND public_key IS NOT NULL`,
      ),
      findKey: db.prepare<[string], KeyRow>(`SELECT ${KEY_COLS} FROM access_keys WHERE hash = ?`),
      getMeta: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
    };
  }

  #audit(e: AuditEntry): void {
    const info = this.#statements.insertAudit.run(
      e.at,
      e.actor,
      e.action,
      e.target,
      e.source,
      JSON.stringify(e.detail),
    );
    const id = Number(info.lastInsertRowid);
    if (!auditPruneDue(id, this.#limits)) return;
    const { cut, olderThan } = auditPrune(id, e.at, this.#limits);
    this.#statements.pruneAudit.run(cut, olderThan);
    const kept = this.#statements.auditUpTo.get(cut)!.n;
    if (kept > 0) for (const listener of this.#auditOverCap) listener(kept);
  }

  #pendingCap(keyId: string): PendingCap | null {
    return pendingCapOf(this.#statements.pendingCounts.get(keyId)!, this.#limits);
  }

  #checkClusterCap(): void {
    if (this.#statements.countClusters.get()!.n >= this.#limits.maxClusters) {
      throw new TunnelError(
        'LIMIT_EXCEEDED',
        `clusters: the relay already holds ${this.#limits.maxClusters}`,
      );
    }
  }

  #cluster(name: string): ClusterRecord | null {
    const r = this.#statements.getCluster.get(name);
    return r ? toCluster(r) : null;
  }

  #transaction<T>(fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'store is closed'));
    try {
      return Promise.resolve(this.#database.transaction(fn)());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#database.close();
  }

  async ping(): Promise<void> {
    await this.#transaction(() => this.#database.prepare('SELECT 1').get());
  }

  getMeta(key: string): Promise<string | null> {
    return this.#transaction(() => this.#statements.getMeta.get(key)?.value ?? null);
  }

  initMeta(key: string, value: string): Promise<boolean> {
    return this.#transaction(
      () =>
        this.#database
          .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING')
          .run(key, value).changes === 1,
    );
  }

  createCluster(c: NewCluster, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord> {
    return this.#transaction(() => {
      if (this.#statements.getCluster.get(c.name))
        throw new TunnelError('CONFLICT', `cluster "${c.name}" already exists`);
      this.#checkClusterCap();
      this.#database
        .prepare(
          `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, agent_replicas)
           VALUES (?, ?, ?, 'Pending', ?, ?, ?)`,
        )
        .run(c.name, c.group, c.displayName, c.createdAt, c.createdAt, c.agentReplicas ?? 1);
      insertPsk(this.#database, c.name, psk);
      this.#audit(audit);
      return this.#cluster(c.name)!;
    });
  }

  getCluster(name: string): Promise<ClusterRecord | null> {
    return this.#transaction(() => this.#cluster(name));
  }

  currentPsk(cluster: string, now: number): Promise<PskSummary | null> {
    return this.#transaction(() => {
      const row = this.#database
        .prepare<[string], PskState>(
          `SELECT cluster, expires_at, used_at, revoked_at FROM psks WHERE cluster = ? ${CURRENT_PSK_ORDER}`,
        )
        .get(cluster);
      return row ? pskSummary(row, now) : null;
    });
  }

  listClusters(filter: { group?: string } = {}): Promise<ClusterRecord[]> {
    return this.#transaction(() => {
      const rows =
        filter.group === undefined
          ? this.#database.prepare<[], ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters ORDER BY name`).all()
          : this.#database
              .prepare<[string], ClusterRow>(
                `SELECT ${CLUSTER_COLS} FROM clusters WHERE grp = ? ORDER BY name`,
              )
              .all(filter.group);
      return rows.map(toCluster);
    });
  }

  clusterPage(query: ClusterPageQuery): Promise<Page<ClusterRecord, string>> {
    return this.#transaction(() => {
      const { sql, params } = clusterPageSql('sqlite', query);
      const rows = this.#database.prepare<unknown[], ClusterRow>(sql).all(...params);
      return pageOf(rows.map(toCluster), query.limit, (c) => c.name);
    });
  }

  countClustersByStatus(): Promise<Record<string, number>> {
    return this.#transaction(() => {
      const out: Record<string, number> = { Pending: 0, Accepted: 0, Denied: 0 };
      const rows = this.#database
        .prepare<[], { status: string; n: number }>(
          'SELECT status, COUNT(*) AS n FROM clusters GROUP BY status',
        )
        .all();
      for (const r of rows) out[r.status] = r.n;
      return out;
    });
  }

  countLeasesSince(sinceWall: number): Promise<number> {
    return this.#transaction(
      () =>
        this.#database
          .prepare<[number], { n: number }>('SELECT COUNT(*) AS n FROM clusters WHERE lease_renew_at >= ?')
          .get(sinceWall)!.n,
    );
  }

  setClusterStatus(
    name: string,
    { status, now, presharedKey }: ClusterStatusChange,
    audit: AuditEntry,
  ): Promise<ClusterRecord | null> {
    return this.#transaction(() => {
      const c = this.#cluster(name);
      if (!c) return null;
      if (c.status !== status) {
        this.#database
          .prepare('UPDATE clusters SET status = ?, status_changed_at = ? WHERE name = ?')
          .run(status, now, name);
      }
      if (status === 'Accepted' && c.publicKey !== null && c.address === null)
        this.#pool.allocate(name, presharedKey);
      this.#audit(audit);
      return this.#cluster(name);
    });
  }

  rotatePsk(name: string, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord | null> {
    return this.#transaction(() => {
      const c = this.#cluster(name);
      if (!c) return null;
      this.#database
        .prepare(
          'UPDATE psks SET revoked_at = ? WHERE cluster = ? AND used_at IS NULL AND revoked_at IS NULL',
        )
        .run(audit.at, name);
      insertPsk(this.#database, name, psk);
      this.#audit(audit);
      return c;
    });
  }

  takeInstallLink(hash: string, now: number, audit: AuditEntry): Promise<TakeInstallResult> {
    return this.#transaction(() => {
      const r = takeInstallLinkInTx(this.#database, hash, now);
      if (r.ok) this.#audit({ ...audit, target: r.cluster, detail: { ...audit.detail, pskId: r.pskId } });
      return r;
    });
  }

  async deleteCluster(name: string, audit: AuditEntry): Promise<ClusterRecord | null> {
    const deleted = await this.#transaction(() => {
      const c = this.#cluster(name);
      if (!c) return null;
      // Child rows go by ON DELETE CASCADE; the address goes back to the free list.
      this.#pool.release(name);
      releaseReplicaAddresses(this.#database, name);
      this.#database.prepare('DELETE FROM clusters WHERE name = ?').run(name);
      const revoked = this.#database
        .prepare<Record<string, unknown>, { id: string }>(revokeClusterKeysSql(sqliteParam))
        .all(sqliteArgs(name, audit.at));
      this.#audit(audit);
      return { cluster: c, revoked: revoked.map((r) => r.id) };
    });
    for (const id of deleted?.revoked ?? []) for (const listener of this.#keyRevoked) listener(id);
    return deleted?.cluster ?? null;
  }

  register(input: RegisterInput, audit: AuditEntry): Promise<RegisterResult> {
    return this.#transaction(() => {
      const result = registerInTx(this.#database, input, {
        cluster: (name) => this.#cluster(name),
        clusterByKey: (key) =>
          this.#statements.clusterByKey.get(key)?.name ?? replicaByKey(this.#database, key)?.cluster ?? null,
        checkClusterCap: () => this.#checkClusterCap(),
        pendingCap: (keyId) => this.#pendingCap(keyId),
        pool: this.#pool,
      });
      if (result.ok) this.#audit(audit);
      return result;
    });
  }

  findAgent(credentialHash: string): Promise<AgentIdentity | null> {
    return this.#transaction(() => {
      const r = this.#statements.findAgent.get(credentialHash);
      if (!r) return null;
      return {
        credentialId: r.id,
        cluster: r.cluster,
        status: r.status as ClusterStatus,
        publicKey: r.public_key,
      };
    });
  }

  renewLease(cluster: string, lease: LeaseInput): Promise<boolean> {
    const after = lease.agentReason ?? null;
    const key = lease.publicKey ?? null;
    return this.#transaction(() =>
      key !== null && renewReplica(this.#database, cluster, key, lease)
        ? true
        : this.#history.renew({
            cluster,
            after,
            now: lease.now,
            renew: () =>
              this.#statements.renew.run({
                name: cluster,
                now: lease.now,
                grace: lease.graceMs,
                claims: lease.claims ? JSON.stringify(lease.claims) : null,
                agentVersion: lease.agentVersion ?? null,
                agentReason: after,
              }).changes === 1,
          }),
    );
  }

  unjoin(
    cluster: string,
    now: number,
    audit: AuditEntry,
    publicKey: string | null = null,
  ): Promise<ClusterRecord | null> {
    return this.#transaction(() => {
      const c = this.#cluster(cluster);
      if (!c) return null;
      const replica = publicKey === null ? null : replicaByKey(this.#database, publicKey);
      if (replica !== null && replica.cluster === cluster && publicKey !== null) {
        unjoinReplica(this.#database, this.#pool, { cluster, publicKey, now });
        this.#audit(audit);
        return clusterAsAgent(c, replica);
      }
      const othersRemain = replicaRows(this.#database, cluster).length > 0;
      this.#pool.release(cluster);
      this.#database
        .prepare(
          `UPDATE agent_credentials SET revoked_at = ? WHERE cluster = ? AND revoked_at IS NULL
             AND (? = 0 OR public_key IS NULL OR public_key = ?)`,
        )
        .run(now, cluster, othersRemain ? 1 : 0, c.publicKey);
      this.#database
        .prepare(
          `UPDATE clusters SET public_key = NULL, addr_index = NULL, preshared_key = NULL, agent_version = NULL,
             claims = '{}', registered_at = NULL, lease_renew_at = NULL, available_since = NULL, agent_reason = NULL,
             status = CASE WHEN ? = 1 THEN status ELSE 'Pending' END,
             status_changed_at = CASE WHEN status = 'Pending' OR ? = 1 THEN status_changed_at ELSE ? END
           WHERE name = ?`,
        )
        .run(othersRemain ? 1 : 0, othersRemain ? 1 : 0, now, cluster);
      this.#audit(audit);
      return c;
    });
  }

  findClusterByKey(publicKey: string): Promise<ClusterRecord | null> {
    return this.#transaction(() => {
      const r = this.#statements.clusterByKey.get(publicKey);
      if (r) return toCluster(r);
      const replica = replicaByKey(this.#database, publicKey);
      const c = replica === null ? null : this.#cluster(replica.cluster);
      return c === null || replica === null ? null : clusterAsAgent(c, replica);
    });
  }

  listAgents(cluster?: string): Promise<ClusterAgentRecord[]> {
    return this.#transaction(() => {
      const replicas = replicaRows(this.#database, cluster);
      if (cluster !== undefined) {
        const c = this.#cluster(cluster);
        return c === null ? [] : agentsOf(c, replicas);
      }
      const primaries = this.#database
        .prepare<[], ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters WHERE public_key IS NOT NULL`)
        .all()
        .map((r) => primaryAgentOf(toCluster(r))!);
      return [...primaries, ...replicas];
    });
  }

  saveAgentPath(path: AgentPathRecord): Promise<void> {
    return this.#transaction(() => this.#history.saveAgentPath(path));
  }

  pathHistory(cluster: string): Promise<PathChange[]> {
    return this.#transaction(() => this.#history.history(cluster));
  }

  relayedReasonCounts(sinceWall: number): Promise<RelayedReasonCount[]> {
    return this.#transaction(() => this.#history.relayedReasonCounts(sinceWall));
  }

  agentPaths(clusters?: string | readonly string[]): Promise<AgentPathRecord[]> {
    return this.#transaction(() => {
      const names = clusters === undefined ? [] : typeof clusters === 'string' ? [clusters] : [...clusters];
      if (clusters !== undefined && names.length === 0) return [];
      const where = clusters === undefined ? '' : ` WHERE cluster IN (${names.map(() => '?').join(', ')})`;
      const rows = this.#database
        .prepare<unknown[], AgentPathRow>(`SELECT ${AGENT_PATH_COLS} FROM agent_paths${where}`)
        .all(...names);
      return rows.map(toAgentPath);
    });
  }

  createAccessKey(
    key: AccessKeyRecord,
    hash: string,
    audit: AuditEntry,
    options: CreateKeyOptions = { cap: 'enforce' },
  ): Promise<void> {
    return this.#transaction(() => {
      const db = this.#database;
      const now = key.createdAt;
      db.prepare(pruneEndedKeysSql(sqliteParam)).run(sqliteArgs(now - ENDED_KEY_RETENTION_MS));
      const counts = db
        .prepare<Record<string, unknown>, LiveKeyCounts>(liveKeyCountsSql(sqliteParam))
        .get(sqliteArgs(now, key.minted?.by ?? null))!;
      const over = endedRowsOver(counts, this.#limits);
      if (over > 0) db.prepare(pruneOldestEndedSql(sqliteParam)).run(sqliteArgs(now, over));
      if (options.cap === 'enforce') checkKeyCaps(key, counts, this.#limits);
      db.prepare(`INSERT INTO access_keys (${KEY_COLS}, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
        ...keyValues(key),
        hash,
      );
      this.#audit(audit);
    });
  }

  findAccessKey(hash: string): Promise<AccessKeyRecord | null> {
    return this.#transaction(() => {
      const r = this.#statements.findKey.get(hash);
      return r ? toKey(r) : null;
    });
  }

  listAccessKeys(): Promise<AccessKeyRecord[]> {
    return this.#transaction(() =>
      this.#database
        .prepare<[], KeyRow>(`SELECT ${KEY_COLS} FROM access_keys ORDER BY created_at, id`)
        .all()
        .map(toKey),
    );
  }

  accessKeyPage(query: {
    limit: number;
    after: AccessKeyCursor | null;
  }): Promise<Page<AccessKeyRecord, AccessKeyCursor>> {
    return this.#transaction(() => {
      const { sql, params } = accessKeyPageSql('sqlite', query);
      const rows = this.#database.prepare<unknown[], KeyRow>(sql).all(...params);
      return pageOf(rows.map(toKey), query.limit, (k) => ({ createdAt: k.createdAt, id: k.id }));
    });
  }

  async revokeAccessKey(id: string, now: number, audit: AuditEntry): Promise<RevokeKeyResult> {
    const result = await this.#transaction((): RevokeKeyResult => {
      const active = this.#database.prepare<[number, string], { n: number }>(
        `SELECT COUNT(*) AS n FROM access_keys WHERE role = 'admin' AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?) AND id = ?`,
      );
      const otherAdmins = this.#database.prepare<[number, string], { n: number }>(
        `SELECT COUNT(*) AS n FROM access_keys WHERE role = 'admin' AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?) AND id != ?`,
      );
      if (active.get(now, id)!.n === 1 && otherAdmins.get(now, id)!.n === 0) return 'last-admin';
      const changes = this.#database
        .prepare('UPDATE access_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
        .run(now, id).changes;
      if (changes === 1) this.#audit(audit);
      return changes === 1 ? 'revoked' : 'not-found';
    });
    if (result === 'revoked') for (const listener of this.#keyRevoked) listener(id);
    return result;
  }

  onAccessKeyRevoked(listener: (keyId: string) => void): () => void {
    this.#keyRevoked.add(listener);
    return () => this.#keyRevoked.delete(listener);
  }

  /** A SQLite file has one relay: no other replica ever reports a change. */
  onRemoteKeyLoss(_listener: (event: RemoteKeyLoss) => void): () => void {
    return () => undefined;
  }

  getPlatformValues(): Promise<Record<string, unknown>> {
    return this.#transaction(() =>
      JSON.parse(this.#statements.getMeta.get('platform-values')?.value ?? '{}'),
    );
  }

  setPlatformValues(values: Record<string, unknown>, audit: AuditEntry): Promise<void> {
    return this.#transaction(() => {
      this.#database
        .prepare(
          'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        )
        .run('platform-values', JSON.stringify(values));
      this.#audit(audit);
    });
  }

  getClusterValues(name: string): Promise<Record<string, unknown> | null> {
    return this.#transaction(() => {
      const r = this.#database
        .prepare<[string], { values_json: string }>('SELECT values_json FROM clusters WHERE name = ?')
        .get(name);
      return r ? (JSON.parse(r.values_json) as Record<string, unknown>) : null;
    });
  }

  setClusterValues(name: string, values: Record<string, unknown>, audit: AuditEntry): Promise<boolean> {
    return this.#transaction(() => {
      const changes = this.#database
        .prepare('UPDATE clusters SET values_json = ? WHERE name = ?')
        .run(JSON.stringify(values), name).changes;
      if (changes === 1) this.#audit(audit);
      return changes === 1;
    });
  }

  appendAudit(entry: AuditEntry): Promise<void> {
    return this.#transaction(() => this.#audit(entry));
  }

  listAudit(limit: number): Promise<AuditRecord[]> {
    return this.#transaction(() =>
      this.#database
        .prepare<[number], AuditRow>(
          'SELECT id, at, actor, action, target, source, detail FROM audit ORDER BY id DESC LIMIT ?',
        )
        .all(limit)
        .map(toAuditRecord),
    );
  }

  auditPage(query: AuditPageQuery): Promise<Page<AuditRecord, number>> {
    return this.#transaction(() => {
      const { sql, params } = auditPageSql('sqlite', query);
      const rows = this.#database.prepare<unknown[], AuditRow>(sql).all(...params);
      return pageOf(rows.map(toAuditRecord), query.limit, (r) => r.id);
    });
  }

  onAuditOverCap(listener: (keptOverCap: number) => void): () => void {
    this.#auditOverCap.add(listener);
    return () => this.#auditOverCap.delete(listener);
  }
}
