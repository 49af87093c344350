/**
 * The SQLite half of agent replicas (store/agent-replicas.ts): a PSK registration into a cluster of more than one
 * replica, the replicas' rows, leases and unjoin, and their addresses on delete. Called inside SqliteStore's
 * transactions.
 */
import type Database from 'better-sqlite3';
import {
  CLUSTER_AGENT_COLS,
  type ClusterAgentRecord,
  type ClusterAgentRow,
  clusterAsAgent,
  keysAfter,
  replicaSlot,
  toClusterAgent,
} from './agent-replicas.js';
import type { AddressPool } from './sqlite-addresses.js';
import type { ClusterRecord, LeaseInput, RegisterInput, RegisterResult } from './types.js';

export function replicaRows(db: Database.Database, cluster?: string): ClusterAgentRecord[] {
  const rows =
    cluster === undefined
      ? db.prepare<[], ClusterAgentRow>(`SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents`).all()
      : db
          .prepare<[string], ClusterAgentRow>(
            `SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents WHERE cluster = ?`,
          )
          .all(cluster);
  return rows.map(toClusterAgent);
}

export function replicaByKey(db: Database.Database, publicKey: string): ClusterAgentRecord | null {
  const r = db
    .prepare<[string], ClusterAgentRow>(
      `SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents WHERE public_key = ?`,
    )
    .get(publicKey);
  return r ? toClusterAgent(r) : null;
}

export interface ReplicaRegisterDeps {
  cluster(name: string): ClusterRecord | null;
  pool: AddressPool;
}

/** A PSK registration (the PSK checked: its row id, and whether its agents spent it) into a cluster of more than one replica. */
export function registerReplicaInTx(
  db: Database.Database,
  input: RegisterInput,
  psk: { id: string; spent: boolean },
  deps: ReplicaRegisterDeps,
): RegisterResult {
  const c = deps.cluster(input.cluster)!;
  const held = { primaryKey: c.publicKey, replicaKeys: replicaRows(db, c.name).map((r) => r.publicKey) };
  const slot = replicaSlot({ ...held, publicKey: input.publicKey, replicas: c.agentReplicas });
  if (slot === 'full') return { ok: false, reason: 'replicas-full', max: c.agentReplicas };
  // A spent PSK (its agents all registered once) admits none but those agents again.
  const known = held.primaryKey === input.publicKey || held.replicaKeys.includes(input.publicKey);
  if (psk.spent && !known) return { ok: false, reason: 'rejected', why: 'used' };
  if (!psk.spent && keysAfter(held, slot, input.publicKey) >= c.agentReplicas) {
    db.prepare('UPDATE psks SET used_at = ? WHERE id = ?').run(input.now, psk.id);
  }
  db.prepare(
    `UPDATE clusters SET status = 'Accepted',
       status_changed_at = CASE WHEN status = 'Accepted' THEN status_changed_at ELSE ? END WHERE name = ?`,
  ).run(input.now, c.name);
  if (slot === 'primary') {
    db.prepare(
      `UPDATE clusters SET public_key = ?, agent_version = ?, claims = ?, registered_at = ?,
         lease_renew_at = NULL, available_since = NULL WHERE name = ?`,
    ).run(input.publicKey, input.agentVersion, JSON.stringify(input.claims), input.now, c.name);
    if (deps.cluster(c.name)!.address === null) deps.pool.allocate(c.name, input.presharedKey);
  } else {
    upsertReplica(db, input, deps.pool);
  }
  replaceCredential(db, input, slot === 'primary');
  const after = deps.cluster(c.name)!;
  if (slot === 'primary') return { ok: true, cluster: after, replacedPublicKey: null };
  return {
    ok: true,
    cluster: clusterAsAgent(after, replicaByKey(db, input.publicKey)!),
    replacedPublicKey: null,
  };
}

function upsertReplica(db: Database.Database, input: RegisterInput, pool: AddressPool): void {
  const existing = replicaByKey(db, input.publicKey);
  if (existing) {
    db.prepare(
      `UPDATE cluster_agents SET agent_version = ?, registered_at = ?, lease_renew_at = NULL, available_since = NULL
         WHERE public_key = ?`,
    ).run(input.agentVersion, input.now, input.publicKey);
    return;
  }
  db.prepare(
    `INSERT INTO cluster_agents (public_key, cluster, addr_index, preshared_key, agent_version, registered_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
  ).run(input.publicKey, input.cluster, pool.take(), input.presharedKey, input.agentVersion, input.now);
}

/** Revokes the key's earlier credentials (the primary's also those issued before credentials named keys). */
function replaceCredential(db: Database.Database, input: RegisterInput, primary: boolean): void {
  db.prepare(
    `UPDATE agent_credentials SET revoked_at = ? WHERE cluster = ? AND revoked_at IS NULL
       AND (public_key = ? OR (? = 1 AND public_key IS NULL))`,
  ).run(input.now, input.cluster, input.publicKey, primary ? 1 : 0);
  db.prepare(
    'INSERT INTO agent_credentials (id, cluster, hash, created_at, public_key) VALUES (?, ?, ?, ?, ?)',
  ).run(input.credential.id, input.cluster, input.credential.hash, input.now, input.publicKey);
}

/** Renews a replica's lease; false when the key is no replica of the cluster. */
export function renewReplica(
  db: Database.Database,
  cluster: string,
  publicKey: string,
  lease: LeaseInput,
): boolean {
  return (
    db
      .prepare(
        `UPDATE cluster_agents SET lease_renew_at = @now,
           available_since = CASE WHEN lease_renew_at IS NULL OR available_since IS NULL
             OR @now >= lease_renew_at + @grace THEN @now ELSE available_since END,
           agent_version = COALESCE(@agentVersion, agent_version)
         WHERE cluster = @cluster AND public_key = @publicKey`,
      )
      .run({
        now: lease.now,
        grace: lease.graceMs,
        agentVersion: lease.agentVersion ?? null,
        cluster,
        publicKey,
      }).changes === 1
  );
}

/** Removes a replica: its credentials revoked, its address freed. False when the key is no replica of the cluster. */
export function unjoinReplica(
  db: Database.Database,
  pool: AddressPool,
  p: { cluster: string; publicKey: string; now: number },
): boolean {
  const r = replicaByKey(db, p.publicKey);
  if (!r || r.cluster !== p.cluster) return false;
  db.prepare('UPDATE agent_credentials SET revoked_at = ? WHERE public_key = ? AND revoked_at IS NULL').run(
    p.now,
    p.publicKey,
  );
  const row = db
    .prepare<[string], { addr_index: number | null }>(
      'SELECT addr_index FROM cluster_agents WHERE public_key = ?',
    )
    .get(p.publicKey);
  if (row?.addr_index != null) pool.put(row.addr_index);
  db.prepare('DELETE FROM cluster_agents WHERE public_key = ?').run(p.publicKey);
  return true;
}

/** Frees the addresses of the cluster's replicas (before the cluster's delete cascades to their rows). */
export function releaseReplicaAddresses(db: Database.Database, cluster: string): void {
  db.prepare(
    `INSERT INTO free_addresses (addr_index) SELECT addr_index FROM cluster_agents
       WHERE cluster = ? AND addr_index IS NOT NULL ON CONFLICT DO NOTHING`,
  ).run(cluster);
}
