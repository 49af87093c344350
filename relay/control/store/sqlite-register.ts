/**
 * The registration transaction of the SQLite store (called inside SqliteStore's transaction):
 * check the PSK (or the bootstrap registration's name), then the key, consume the PSK, record the
 * agent, replace its credential, and allocate the address when Accepted.
 */
import type Database from 'better-sqlite3';
import type { PendingCap } from './pending-caps.js';
import { pskRefusal } from './psk-refusal.js';
import type { AddressPool } from './sqlite-addresses.js';
import { registerReplicaInTx } from './sqlite-agent-replicas.js';
import type { ClusterRecord, ClusterStatus, RegisterInput, RegisterResult } from './types.js';

export interface RegisterDeps {
  cluster(name: string): ClusterRecord | null;
  /** Name of the cluster holding `publicKey`, or null. */
  clusterByKey(publicKey: string): string | null;
  /** Throws LIMIT_EXCEEDED when the relay holds its maximum number of clusters. */
  checkClusterCap(): void;
  /** The registration cap a new Pending cluster of bootstrap key `keyId` would pass (pending-caps.ts), or null. */
  pendingCap(keyId: string): PendingCap | null;
  pool: AddressPool;
}

export function registerInTx(
  db: Database.Database,
  input: RegisterInput,
  deps: RegisterDeps,
): RegisterResult {
  // The credential is checked before anything else, so an unauthenticated caller learns nothing.
  const keyInUse = (): boolean => {
    const owner = deps.clusterByKey(input.publicKey);
    return owner !== null && owner !== input.cluster;
  };
  let status: ClusterStatus;
  if (input.via.kind === 'psk') {
    const psk = db
      .prepare<
        [string],
        {
          id: string;
          cluster: string;
          expires_at: number;
          used_at: number | null;
          revoked_at: number | null;
        }
      >('SELECT id, cluster, expires_at, used_at, revoked_at FROM psks WHERE hash = ?')
      .get(input.via.pskHash);
    if (!psk) return { ok: false, reason: 'rejected', why: 'wrong' };
    const refused = pskRefusal(psk, input);
    const replicas = deps.cluster(input.cluster)?.agentReplicas ?? 1;
    // A replica cluster's PSK spent by its agents still answers them: a known key in place, a new one AGENT_REPLICAS_FULL.
    const spent = refused === 'used' && replicas > 1;
    if (refused !== null && !spent) return { ok: false, reason: 'rejected', why: refused };
    if (keyInUse()) return { ok: false, reason: 'key-in-use' };
    if (replicas > 1) return registerReplicaInTx(db, input, { id: psk.id, spent }, deps);
    db.prepare('UPDATE psks SET used_at = ? WHERE id = ?').run(input.now, psk.id);
    status = 'Accepted';
  } else {
    if (keyInUse()) return { ok: false, reason: 'key-in-use' };
    const c = deps.cluster(input.cluster);
    if (c && !(c.status === 'Pending' && c.publicKey === input.publicKey))
      return { ok: false, reason: 'conflict' };
    if (!c) {
      const capped = deps.pendingCap(input.via.keyId);
      if (capped !== null) return { ok: false, reason: 'pending-cap', ...capped };
      deps.checkClusterCap();
      db.prepare(
        `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, bootstrap_key)
             VALUES (?, ?, ?, 'Pending', ?, ?, ?)`,
      ).run(input.cluster, input.via.group, input.cluster, input.now, input.now, input.via.keyId);
    }
    status = 'Pending';
  }
  const before = deps.cluster(input.cluster)!;
  const keyChanged = before.publicKey !== input.publicKey;
  if (keyChanged) deps.pool.release(input.cluster);
  db.prepare(
    `UPDATE clusters SET public_key = ?, agent_version = ?, claims = ?, registered_at = ?,
           status = ?, status_changed_at = CASE WHEN status = ? THEN status_changed_at ELSE ? END,
           lease_renew_at = NULL, available_since = NULL
           ${keyChanged ? ', addr_index = NULL, preshared_key = NULL' : ''}
         WHERE name = ?`,
  ).run(
    input.publicKey,
    input.agentVersion,
    JSON.stringify(input.claims),
    input.now,
    status,
    status,
    input.now,
    input.cluster,
  );
  db.prepare('UPDATE agent_credentials SET revoked_at = ? WHERE cluster = ? AND revoked_at IS NULL').run(
    input.now,
    input.cluster,
  );
  db.prepare(
    'INSERT INTO agent_credentials (id, cluster, hash, created_at, public_key) VALUES (?, ?, ?, ?, ?)',
  ).run(input.credential.id, input.cluster, input.credential.hash, input.now, input.publicKey);
  const after = deps.cluster(input.cluster)!;
  if (status === 'Accepted' && after.address === null) deps.pool.allocate(input.cluster, input.presharedKey);
  const replacedPublicKey = keyChanged ? before.publicKey : null;
  return { ok: true, cluster: deps.cluster(input.cluster)!, replacedPublicKey };
}
