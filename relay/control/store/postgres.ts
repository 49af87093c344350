/**
 * PostgreSQL store (node-postgres): the same interface and behaviour as the SQLite store, for several
 * relay replicas sharing one database. A bounded pool; migrations under an advisory lock on open; every
 * multi-row change one SERIALIZABLE transaction together with its audit row (postgres-tx.ts); reads are
 * single statements. A revoked access key is announced with NOTIFY in the revoking transaction and
 * reaches the listeners of every replica (postgres-events.ts).
 */

import pg from 'pg';
import type { Clock } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import { DEFAULT_POOL_SIZE } from '../../ops/config/config-store.js';
import {
  CONNECT_TIMEOUT_MS,
  clientConfig,
  connectError,
  type PostgresConnection,
  poolConfig,
  scrub,
} from '../../ops/config/postgres-connection.js';
import { describeTarget } from '../../ops/config/postgres-url.js';
import type { FailureLimits } from '../../ops/failure-limits.js';
import type { FailureLimiterOptions } from '../../ops/rate-limit.js';
import {
  checkKeyCaps,
  ENDED_KEY_RETENTION_MS,
  endedRowsOver,
  type LiveKeyCounts,
  liveKeyCountsSql,
  pruneEndedKeysSql,
  pruneOldestEndedSql,
  revokeClusterKeysSql,
} from './access-key-caps.js';
import { AGENT_PATH_COLS, type AgentPathRow, toAgentPath } from './agent-path-row.js';
import { agentsOf, type ClusterAgentRecord, clusterAsAgent, primaryAgentOf } from './agent-replicas.js';
import { auditPrune, auditPruneDue, auditUpToSql, pruneAuditSql } from './audit-retention.js';
import { accessKeyPageSql, auditPageSql, clusterPageSql, pageOf } from './page-query.js';
import { type PathHistoryRow, selectPathHistorySql, toPathChange } from './path-history-row.js';
import { type PendingCap, type PendingCounts, pendingCapOf, pendingCountsSql } from './pending-caps.js';
import { allocateAddress, releaseAddress } from './postgres-addresses.js';
import {
  releaseReplicaAddressesPg,
  renewReplicaPg,
  replicaByKeyPg,
  replicaRowsPg,
  unjoinReplicaPg,
} from './postgres-agent-replicas.js';
import { EVENTS_CHANNEL, EventFeed, encodeEvent, newOrigin, type StoreEvent } from './postgres-events.js';
import { PgFailureLimits } from './postgres-failure-limits.js';
import { insertPskPg, takeInstallLinkPg } from './postgres-install-links.js';
import { PgMeshTables } from './postgres-mesh.js';
import { applyPgMigrations } from './postgres-migrations.js';
import {
  noteAgentReasonPg,
  RENEW_SQL,
  relayedReasonCountsPg,
  saveAgentPathPg,
} from './postgres-path-history.js';
import { registerInPgTx } from './postgres-register.js';
import { serializable, type Tx, txOf } from './postgres-tx.js';
import { CURRENT_PSK_ORDER, type PskState, type PskSummary, pskSummary } from './psk-refusal.js';
import { DEFAULT_STORE_LIMITS } from './sqlite.js';
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

export interface PostgresStoreOptions {
  connection: PostgresConnection;
  /** Most connections this replica holds (default 10). */
  poolSize?: number;
  connectTimeoutMs?: number;
  /** Refuse (BAD_CONFIG) a database that holds no relay store yet instead of creating one (offline tools). */
  existingOnly?: boolean;
  limits?: Partial<StoreLimits>;
  /** Connection trouble after the start (messages carry no password). Default: ignored. */
  onError?: (message: string) => void;
}

interface Listeners {
  keyRevoked: Set<(keyId: string) => void>;
  keyLoss: Set<(event: RemoteKeyLoss) => void>;
  auditOverCap: Set<(keptOverCap: number) => void>;
}

const pgParam = (i: number) => `$${i}`;

async function requireRelaySchema(client: pg.PoolClient, connection: PostgresConnection): Promise<void> {
  const r = await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (r.rows[0]?.t == null) {
    throw new TunnelError(
      'BAD_CONFIG',
      `store: there is no relay store in ${describeTarget(connection.target)}; give the --store the relay runs with`,
    );
  }
}

export class PostgresStore implements Store {
  readonly #pool: pg.Pool;
  readonly #limits: StoreLimits;
  readonly #origin: string;
  readonly #feed: EventFeed;
  readonly #listeners: Listeners;
  #closed = false;

  private constructor(parts: {
    pool: pg.Pool;
    limits: StoreLimits;
    origin: string;
    feed: EventFeed;
    listeners: Listeners;
  }) {
    this.#pool = parts.pool;
    this.#limits = parts.limits;
    this.#origin = parts.origin;
    this.#feed = parts.feed;
    this.#listeners = parts.listeners;
  }

  /** Connects, applies the migrations and starts listening; BAD_CONFIG naming the server when it cannot. */
  static async open(opts: PostgresStoreOptions): Promise<PostgresStore> {
    const { connection } = opts;
    const timeout = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const onError = opts.onError ?? (() => undefined);
    const pool = new pg.Pool(poolConfig(connection, opts.poolSize ?? DEFAULT_POOL_SIZE, timeout));
    // An idle connection the server closed is dropped by the pool; the next query opens another.
    pool.on('error', (err) => onError(`store: ${scrub(err.message, connection.password)}`));
    const origin = newOrigin();
    const listeners: Listeners = { keyRevoked: new Set(), keyLoss: new Set(), auditOverCap: new Set() };
    let feed: EventFeed | null = null;
    try {
      const client = await pool.connect();
      try {
        if (opts.existingOnly) await requireRelaySchema(client, connection);
        await applyPgMigrations(client);
      } finally {
        client.release();
      }
      feed = await EventFeed.start({
        client: () => new pg.Client(clientConfig(connection, timeout)),
        origin,
        onEvent: (event) => {
          if (event.kind === 'key-revoked') for (const listener of listeners.keyRevoked) listener(event.id);
          else for (const listener of listeners.keyLoss) listener(event);
        },
        onError: (message) => onError(scrub(message, connection.password)),
      });
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err instanceof TunnelError ? err : connectError(connection, err);
    }
    const limits = { ...DEFAULT_STORE_LIMITS, ...opts.limits };
    return new PostgresStore({ pool, limits, origin, feed, listeners });
  }

  #write<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'store is closed'));
    return serializable(this.#pool, body);
  }

  /**
   * A write that changes the set of clusters (the cluster cap counts them) or their tunnel addresses: one at a
   * time (postgres-tx.ts).
   */
  #addressWrite<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'store is closed'));
    return serializable(this.#pool, body, { lockFirst: 'address_pool' });
  }

  #read(): Promise<Tx> {
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'store is closed'));
    return Promise.resolve(txOf(this.#pool));
  }

  async #audit(tx: Tx, e: AuditEntry): Promise<void> {
    const row = await tx.one<{ id: number }>(
      'INSERT INTO audit (at, actor, action, target, source, detail) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
      [e.at, e.actor, e.action, e.target, e.source, JSON.stringify(e.detail)],
    );
    const id = row!.id;
    if (!auditPruneDue(id, this.#limits)) return;
    const { cut, olderThan } = auditPrune(id, e.at, this.#limits);
    await tx.run(pruneAuditSql(pgParam), [cut, olderThan]);
    const kept = (await tx.one<{ n: number }>(auditUpToSql(pgParam), [cut]))!.n;
    if (kept > 0) for (const listener of this.#listeners.auditOverCap) listener(kept);
  }

  async #pendingCap(tx: Tx, keyId: string): Promise<PendingCap | null> {
    const counts = await tx.one<PendingCounts>(pendingCountsSql(pgParam), [keyId]);
    return pendingCapOf(counts!, this.#limits);
  }

  /** Tells the other replicas, when (and only if) the transaction commits. */
  async #notify(tx: Tx, event: StoreEvent): Promise<void> {
    await tx.one('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, encodeEvent({ origin: this.#origin, event })]);
  }

  async #checkClusterCap(tx: Tx): Promise<void> {
    const { n } = (await tx.one<{ n: number }>('SELECT COUNT(*) AS n FROM clusters'))!;
    if (n >= this.#limits.maxClusters) {
      throw new TunnelError(
        'LIMIT_EXCEEDED',
        `clusters: the relay already holds ${this.#limits.maxClusters}`,
      );
    }
  }

  async #cluster(tx: Tx, name: string): Promise<ClusterRecord | null> {
    const r = await tx.one<ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters WHERE name = $1`, [name]);
    return r ? toCluster(r) : null;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#feed.close();
    await this.#pool.end();
  }

  async ping(): Promise<void> {
    await (await this.#read()).one('SELECT 1');
  }

  async getMeta(key: string): Promise<string | null> {
    const r = await (await this.#read()).one<{ value: string }>('SELECT value FROM meta WHERE key = $1', [
      key,
    ]);
    return r?.value ?? null;
  }

  async initMeta(key: string, value: string): Promise<boolean> {
    const tx = await this.#read();
    return (
      (await tx.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING', [key, value])) ===
      1
    );
  }

  createCluster(c: NewCluster, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord> {
    return this.#addressWrite(async (tx) => {
      if (await this.#cluster(tx, c.name))
        throw new TunnelError('CONFLICT', `cluster "${c.name}" already exists`);
      await this.#checkClusterCap(tx);
      await tx.run(
        `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, agent_replicas)
         VALUES ($1, $2, $3, 'Pending', $4, $4, $5)`,
        [c.name, c.group, c.displayName, c.createdAt, c.agentReplicas ?? 1],
      );
      await insertPskPg(tx, c.name, psk);
      await this.#audit(tx, audit);
      return (await this.#cluster(tx, c.name))!;
    });
  }

  async getCluster(name: string): Promise<ClusterRecord | null> {
    return this.#cluster(await this.#read(), name);
  }

  async currentPsk(cluster: string, now: number): Promise<PskSummary | null> {
    const row = await (await this.#read()).one<PskState>(
      `SELECT cluster, expires_at, used_at, revoked_at FROM psks WHERE cluster = $1 ${CURRENT_PSK_ORDER}`,
      [cluster],
    );
    return row ? pskSummary(row, now) : null;
  }

  async listClusters(filter: { group?: string } = {}): Promise<ClusterRecord[]> {
    const tx = await this.#read();
    const rows =
      filter.group === undefined
        ? await tx.all<ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters ORDER BY name`)
        : await tx.all<ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters WHERE grp = $1 ORDER BY name`, [
            filter.group,
          ]);
    return rows.map(toCluster);
  }

  async clusterPage(query: ClusterPageQuery): Promise<Page<ClusterRecord, string>> {
    const { sql, params } = clusterPageSql('postgres', query);
    const rows = await (await this.#read()).all<ClusterRow>(sql, params);
    return pageOf(rows.map(toCluster), query.limit, (c) => c.name);
  }

  async countClustersByStatus(): Promise<Record<string, number>> {
    const tx = await this.#read();
    const out: Record<string, number> = { Pending: 0, Accepted: 0, Denied: 0 };
    const rows = await tx.all<{ status: string; n: number }>(
      'SELECT status, COUNT(*) AS n FROM clusters GROUP BY status',
    );
    for (const r of rows) out[r.status] = r.n;
    return out;
  }

  async countLeasesSince(sinceWall: number): Promise<number> {
    const tx = await this.#read();
    return (await tx.one<{ n: number }>('SELECT COUNT(*) AS n FROM clusters WHERE lease_renew_at >= $1', [
      sinceWall,
    ]))!.n;
  }

  setClusterStatus(
    name: string,
    { status, now, presharedKey }: ClusterStatusChange,
    audit: AuditEntry,
  ): Promise<ClusterRecord | null> {
    return this.#addressWrite(async (tx) => {
      const c = await this.#cluster(tx, name);
      if (!c) return null;
      if (c.status !== status) {
        await tx.run('UPDATE clusters SET status = $1, status_changed_at = $2 WHERE name = $3', [
          status,
          now,
          name,
        ]);
      }
      if (status === 'Accepted' && c.publicKey !== null && c.address === null)
        await allocateAddress(tx, name, presharedKey);
      await this.#audit(tx, audit);
      // As the deny route does: the agent's sessions end even when the cluster was Denied already.
      if (status === 'Denied') {
        for (const r of await replicaRowsPg(tx, name))
          await this.#notify(tx, { kind: 'cluster-denied', cluster: name, publicKey: r.publicKey });
      }
      if (status === 'Denied' && c.publicKey !== null) {
        await this.#notify(tx, { kind: 'cluster-denied', cluster: name, publicKey: c.publicKey });
      }
      return this.#cluster(tx, name);
    });
  }

  rotatePsk(name: string, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord | null> {
    return this.#write(async (tx) => {
      const c = await this.#cluster(tx, name);
      if (!c) return null;
      await tx.run(
        'UPDATE psks SET revoked_at = $1 WHERE cluster = $2 AND used_at IS NULL AND revoked_at IS NULL',
        [audit.at, name],
      );
      await insertPskPg(tx, name, psk);
      await this.#audit(tx, audit);
      return c;
    });
  }

  takeInstallLink(hash: string, now: number, audit: AuditEntry): Promise<TakeInstallResult> {
    return this.#write(async (tx) => {
      const r = await takeInstallLinkPg(tx, hash, now);
      if (r.ok)
        await this.#audit(tx, { ...audit, target: r.cluster, detail: { ...audit.detail, pskId: r.pskId } });
      return r;
    });
  }

  async deleteCluster(name: string, audit: AuditEntry): Promise<ClusterRecord | null> {
    const deleted = await this.#addressWrite(async (tx) => {
      const c = await this.#cluster(tx, name);
      if (!c) return null;
      // Child rows go by ON DELETE CASCADE; the address goes back to the free list.
      await releaseAddress(tx, name);
      await releaseReplicaAddressesPg(tx, name);
      const replicas = await replicaRowsPg(tx, name);
      await tx.run('DELETE FROM clusters WHERE name = $1', [name]);
      const revoked = await tx.all<{ id: string }>(revokeClusterKeysSql(pgParam), [name, audit.at]);
      await this.#audit(tx, audit);
      if (c.publicKey !== null)
        await this.#notify(tx, { kind: 'cluster-deleted', cluster: name, publicKey: c.publicKey });
      for (const r of replicas)
        await this.#notify(tx, { kind: 'cluster-deleted', cluster: name, publicKey: r.publicKey });
      for (const { id } of revoked) await this.#notify(tx, { kind: 'key-revoked', id });
      return { cluster: c, revoked: revoked.map((r) => r.id) };
    });
    for (const id of deleted?.revoked ?? []) for (const listener of this.#listeners.keyRevoked) listener(id);
    return deleted?.cluster ?? null;
  }

  register(input: RegisterInput, audit: AuditEntry): Promise<RegisterResult> {
    return this.#addressWrite(async (tx) => {
      const result = await registerInPgTx(tx, input, {
        cluster: (t, name) => this.#cluster(t, name),
        checkClusterCap: (t) => this.#checkClusterCap(t),
        pendingCap: (t, keyId) => this.#pendingCap(t, keyId),
      });
      if (result.ok) await this.#audit(tx, audit);
      if (result.ok && result.replacedPublicKey !== null) {
        const replaced = {
          kind: 'agent-unjoined',
          cluster: input.cluster,
          publicKey: result.replacedPublicKey,
        } as const;
        await this.#notify(tx, replaced);
      }
      return result;
    });
  }

  async findAgent(credentialHash: string): Promise<AgentIdentity | null> {
    const r = await (await this.#read()).one<{
      id: string;
      cluster: string;
      status: string;
      public_key: string | null;
    }>(
      `SELECT a.id, a.cluster, c.status, a.public_key FROM agent_credentials a JOIN clusters c ON c.name = a.cluster
         WHERE a.hash = $1 AND a.revoked_at IS NULL`,
      [credentialHash],
    );
    if (!r) return null;
    return {
      credentialId: r.id,
      cluster: r.cluster,
      status: r.status as ClusterStatus,
      publicKey: r.public_key,
    };
  }

  async renewLease(cluster: string, lease: LeaseInput): Promise<boolean> {
    const after = lease.agentReason ?? null;
    const key = lease.publicKey ?? null;
    if (key !== null && (await renewReplicaPg(await this.#read(), cluster, key, lease))) return true;
    const renewed = await (await this.#read()).one<{ before: string | null }>(RENEW_SQL, [
      lease.now,
      lease.graceMs,
      lease.claims ? JSON.stringify(lease.claims) : null,
      lease.agentVersion ?? null,
      cluster,
      after,
    ]);
    if (!renewed) return false;
    // Rare (the agent's reason changed): its path history entry, if it makes one.
    if (renewed.before !== after)
      await this.#write((tx) => noteAgentReasonPg(tx, { cluster, now: lease.now }));
    return true;
  }

  unjoin(
    cluster: string,
    now: number,
    audit: AuditEntry,
    publicKey: string | null = null,
  ): Promise<ClusterRecord | null> {
    return this.#addressWrite(async (tx) => {
      const c = await this.#cluster(tx, cluster);
      if (!c) return null;
      const replica = publicKey === null ? null : await replicaByKeyPg(tx, publicKey);
      if (replica !== null && replica.cluster === cluster) {
        await unjoinReplicaPg(tx, { cluster, publicKey: replica.publicKey, now });
        await this.#audit(tx, audit);
        await this.#notify(tx, { kind: 'agent-unjoined', cluster, publicKey: replica.publicKey });
        return clusterAsAgent(c, replica);
      }
      const othersRemain = (await replicaRowsPg(tx, cluster)).length > 0;
      await releaseAddress(tx, cluster);
      await tx.run(
        `UPDATE agent_credentials SET revoked_at = $1 WHERE cluster = $2 AND revoked_at IS NULL
           AND (NOT $3 OR public_key IS NULL OR public_key = $4)`,
        [now, cluster, othersRemain, c.publicKey],
      );
      await tx.run(
        `UPDATE clusters SET public_key = NULL, addr_index = NULL, preshared_key = NULL, agent_version = NULL,
             claims = '{}', registered_at = NULL, lease_renew_at = NULL, available_since = NULL, agent_reason = NULL,
             status = CASE WHEN $3 THEN status ELSE 'Pending' END,
             status_changed_at = CASE WHEN status = 'Pending' OR $3 THEN status_changed_at ELSE $1 END
           WHERE name = $2`,
        [now, cluster, othersRemain],
      );
      await this.#audit(tx, audit);
      if (c.publicKey !== null)
        await this.#notify(tx, { kind: 'agent-unjoined', cluster, publicKey: c.publicKey });
      return c;
    });
  }

  saveAgentPath(path: AgentPathRecord): Promise<void> {
    return this.#write((tx) => saveAgentPathPg(tx, path));
  }

  async pathHistory(cluster: string): Promise<PathChange[]> {
    const rows = await (await this.#read()).all<PathHistoryRow>(
      selectPathHistorySql((i) => `$${i}`),
      [cluster],
    );
    return rows.map(toPathChange);
  }

  async relayedReasonCounts(sinceWall: number): Promise<RelayedReasonCount[]> {
    return relayedReasonCountsPg(await this.#read(), sinceWall);
  }

  async agentPaths(clusters?: string | readonly string[]): Promise<AgentPathRecord[]> {
    const names = clusters === undefined ? [] : typeof clusters === 'string' ? [clusters] : [...clusters];
    if (clusters !== undefined && names.length === 0) return [];
    const where = clusters === undefined ? '' : ' WHERE cluster = ANY($1)';
    const rows = await (await this.#read()).all<AgentPathRow>(
      `SELECT ${AGENT_PATH_COLS} FROM agent_paths${where}`,
      clusters === undefined ? [] : [names],
    );
    return rows.map(toAgentPath);
  }

  async findClusterByKey(publicKey: string): Promise<ClusterRecord | null> {
    const tx = await this.#read();
    const r = await tx.one<ClusterRow>(`SELECT ${CLUSTER_COLS} FROM clusters WHERE public_key = $1`, [
      publicKey,
    ]);
    if (r) return toCluster(r);
    const replica = await replicaByKeyPg(tx, publicKey);
    const c = replica === null ? null : await this.#cluster(tx, replica.cluster);
    return c === null || replica === null ? null : clusterAsAgent(c, replica);
  }

  async listAgents(cluster?: string): Promise<ClusterAgentRecord[]> {
    const tx = await this.#read();
    const replicas = await replicaRowsPg(tx, cluster);
    if (cluster !== undefined) {
      const c = await this.#cluster(tx, cluster);
      return c === null ? [] : agentsOf(c, replicas);
    }
    const rows = await tx.all<ClusterRow>(
      `SELECT ${CLUSTER_COLS} FROM clusters WHERE public_key IS NOT NULL`,
    );
    return [...rows.map((r) => primaryAgentOf(toCluster(r))!), ...replicas];
  }

  createAccessKey(
    key: AccessKeyRecord,
    hash: string,
    audit: AuditEntry,
    options: CreateKeyOptions = { cap: 'enforce' },
  ): Promise<void> {
    return this.#write(async (tx) => {
      const now = key.createdAt;
      await tx.run(pruneEndedKeysSql(pgParam), [now - ENDED_KEY_RETENTION_MS]);
      const counts = (await tx.one<LiveKeyCounts>(liveKeyCountsSql(pgParam), [now, key.minted?.by ?? null]))!;
      const over = endedRowsOver(counts, this.#limits);
      if (over > 0) await tx.run(pruneOldestEndedSql(pgParam), [now, over]);
      if (options.cap === 'enforce') checkKeyCaps(key, counts, this.#limits);
      await tx.run(
        `INSERT INTO access_keys (${KEY_COLS}, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [...keyValues(key), hash],
      );
      await this.#audit(tx, audit);
    });
  }

  async findAccessKey(hash: string): Promise<AccessKeyRecord | null> {
    const r = await (await this.#read()).one<KeyRow>(`SELECT ${KEY_COLS} FROM access_keys WHERE hash = $1`, [
      hash,
    ]);
    return r ? toKey(r) : null;
  }

  async listAccessKeys(): Promise<AccessKeyRecord[]> {
    const rows = await (await this.#read()).all<KeyRow>(
      `SELECT ${KEY_COLS} FROM access_keys ORDER BY created_at, id`,
    );
    return rows.map(toKey);
  }

  async accessKeyPage(query: {
    limit: number;
    after: AccessKeyCursor | null;
  }): Promise<Page<AccessKeyRecord, AccessKeyCursor>> {
    const { sql, params } = accessKeyPageSql('postgres', query);
    const rows = await (await this.#read()).all<KeyRow>(sql, params);
    return pageOf(rows.map(toKey), query.limit, (k) => ({ createdAt: k.createdAt, id: k.id }));
  }

  async revokeAccessKey(id: string, now: number, audit: AuditEntry): Promise<RevokeKeyResult> {
    const result = await this.#write(async (tx): Promise<RevokeKeyResult> => {
      // The key itself active, and no other active admin key: revoking it would leave no administrator.
      const admins = (await tx.one<{ self: number; others: number }>(
        `SELECT COUNT(*) FILTER (WHERE id = $2) AS self, COUNT(*) FILTER (WHERE id != $2) AS others
           FROM access_keys WHERE role = 'admin' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)`,
        [now, id],
      ))!;
      if (admins.self === 1 && admins.others === 0) return 'last-admin';
      const changes = await tx.run(
        'UPDATE access_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
        [now, id],
      );
      if (changes !== 1) return 'not-found';
      await this.#audit(tx, audit);
      await this.#notify(tx, { kind: 'key-revoked', id });
      return 'revoked';
    });
    if (result === 'revoked') for (const listener of this.#listeners.keyRevoked) listener(id);
    return result;
  }

  onAccessKeyRevoked(listener: (keyId: string) => void): () => void {
    this.#listeners.keyRevoked.add(listener);
    return () => this.#listeners.keyRevoked.delete(listener);
  }

  /** The failed-registration limit, shared by every replica on this database. */
  /** The replica mesh's tables (fleet identity, membership, agent locations). */
  meshTables(): PgMeshTables {
    return new PgMeshTables({ db: () => this.#read(), serializable: (body) => this.#write(body) });
  }

  failureLimits(clock: Clock, options: FailureLimiterOptions): FailureLimits {
    return new PgFailureLimits({
      db: () => this.#read(),
      serializable: (body) => this.#write(body),
      clock,
      options,
    });
  }

  onRemoteKeyLoss(listener: (event: RemoteKeyLoss) => void): () => void {
    this.#listeners.keyLoss.add(listener);
    return () => this.#listeners.keyLoss.delete(listener);
  }

  async getPlatformValues(): Promise<Record<string, unknown>> {
    return JSON.parse((await this.getMeta('platform-values')) ?? '{}') as Record<string, unknown>;
  }

  setPlatformValues(values: Record<string, unknown>, audit: AuditEntry): Promise<void> {
    return this.#write(async (tx) => {
      await tx.run(
        'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        ['platform-values', JSON.stringify(values)],
      );
      await this.#audit(tx, audit);
    });
  }

  async getClusterValues(name: string): Promise<Record<string, unknown> | null> {
    const r = await (await this.#read()).one<{ values_json: string }>(
      'SELECT values_json FROM clusters WHERE name = $1',
      [name],
    );
    return r ? (JSON.parse(r.values_json) as Record<string, unknown>) : null;
  }

  setClusterValues(name: string, values: Record<string, unknown>, audit: AuditEntry): Promise<boolean> {
    return this.#write(async (tx) => {
      const changes = await tx.run('UPDATE clusters SET values_json = $1 WHERE name = $2', [
        JSON.stringify(values),
        name,
      ]);
      if (changes === 1) await this.#audit(tx, audit);
      return changes === 1;
    });
  }

  appendAudit(entry: AuditEntry): Promise<void> {
    return this.#write((tx) => this.#audit(tx, entry));
  }

  async listAudit(limit: number): Promise<AuditRecord[]> {
    const rows = await (await this.#read()).all<AuditRow>(
      'SELECT id, at, actor, action, target, source, detail FROM audit ORDER BY id DESC LIMIT $1',
      [limit],
    );
    return rows.map(toAuditRecord);
  }

  async auditPage(query: AuditPageQuery): Promise<Page<AuditRecord, number>> {
    const { sql, params } = auditPageSql('postgres', query);
    const rows = await (await this.#read()).all<AuditRow>(sql, params);
    return pageOf(rows.map(toAuditRecord), query.limit, (r) => r.id);
  }

  onAuditOverCap(listener: (keptOverCap: number) => void): () => void {
    this.#listeners.auditOverCap.add(listener);
    return () => this.#listeners.auditOverCap.delete(listener);
  }
}
