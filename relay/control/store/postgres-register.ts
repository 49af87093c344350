/**
 * The registration transaction of the PostgreSQL store, step for step the SQLite one
 * (sqlite-register.ts): check the PSK (or the bootstrap registration's name), then the key, consume
 * the PSK, record the agent, replace its credential, and allocate the address when Accepted. It runs
 * SERIALIZABLE, so the same PSK sent to two replicas at once registers exactly once.
 */

import type { PendingCap } from './pending-caps.js';
import { allocateAddress, releaseAddress } from './postgres-addresses.js';
import { registerReplicaInPgTx } from './postgres-agent-replicas.js';
import type { Tx } from './postgres-tx.js';
import { pskRefusal } from './psk-refusal.js';
import type { ClusterRecord, ClusterStatus, RegisterInput, RegisterResult } from './types.js';

export interface PgRegisterDeps {
  cluster(tx: Tx, name: string): Promise<ClusterRecord | null>;
  /** Throws LIMIT_EXCEEDED when the relay holds its maximum number of clusters. */
  checkClusterCap(tx: Tx): Promise<void>;
  /** The registration cap a new Pending cluster of bootstrap key `keyId` would pass (pending-caps.ts), or null. */
  pendingCap(tx: Tx, keyId: string): Promise<PendingCap | null>;
}

interface PskRow {
  id: string;
  cluster: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

async function keyInUse(tx: Tx, input: RegisterInput): Promise<boolean> {
  const owner = await tx.one<{ name: string }>(
    `SELECT name FROM clusters WHERE public_key = $1
     UNION ALL SELECT cluster AS name FROM cluster_agents WHERE public_key = $1`,
    [input.publicKey],
  );
  return owner !== undefined && owner.name !== input.cluster;
}

/** The status the registration gives, or the refusal. */
async function admit(
  tx: Tx,
  input: RegisterInput,
  deps: PgRegisterDeps,
): Promise<ClusterStatus | RegisterResult> {
  // The credential is checked before anything else, so an unauthenticated caller learns nothing.
  if (input.via.kind === 'psk') {
    const psk = await tx.one<PskRow>(
      'SELECT id, cluster, expires_at, used_at, revoked_at FROM psks WHERE hash = $1',
      [input.via.pskHash],
    );
    if (!psk) return { ok: false, reason: 'rejected', why: 'wrong' };
    const refused = pskRefusal(psk, input);
    const replicas = (await deps.cluster(tx, input.cluster))?.agentReplicas ?? 1;
    // A replica cluster's PSK spent by its agents still answers them: a known key in place, a new one AGENT_REPLICAS_FULL.
    const spent = refused === 'used' && replicas > 1;
    if (refused !== null && !spent) return { ok: false, reason: 'rejected', why: refused };
    if (await keyInUse(tx, input)) return { ok: false, reason: 'key-in-use' };
    if (replicas > 1) return registerReplicaInPgTx(tx, input, { id: psk.id, spent }, deps.cluster);
    await tx.run('UPDATE psks SET used_at = $1 WHERE id = $2', [input.now, psk.id]);
    return 'Accepted';
  }
  if (await keyInUse(tx, input)) return { ok: false, reason: 'key-in-use' };
  const c = await deps.cluster(tx, input.cluster);
  if (c && !(c.status === 'Pending' && c.publicKey === input.publicKey))
    return { ok: false, reason: 'conflict' };
  if (!c) {
    const capped = await deps.pendingCap(tx, input.via.keyId);
    if (capped !== null) return { ok: false, reason: 'pending-cap', ...capped };
    await deps.checkClusterCap(tx);
    await tx.run(
      `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, bootstrap_key)
         VALUES ($1, $2, $3, 'Pending', $4, $5, $6)`,
      [input.cluster, input.via.group, input.cluster, input.now, input.now, input.via.keyId],
    );
  }
  return 'Pending';
}

export async function registerInPgTx(
  tx: Tx,
  input: RegisterInput,
  deps: PgRegisterDeps,
): Promise<RegisterResult> {
  const admitted = await admit(tx, input, deps);
  if (typeof admitted !== 'string') return admitted;
  const status = admitted;
  const before = (await deps.cluster(tx, input.cluster))!;
  const keyChanged = before.publicKey !== input.publicKey;
  if (keyChanged) await releaseAddress(tx, input.cluster);
  await tx.run(
    `UPDATE clusters SET public_key = $1, agent_version = $2, claims = $3, registered_at = $4,
           status = $5, status_changed_at = CASE WHEN status = $5 THEN status_changed_at ELSE $4 END,
           lease_renew_at = NULL, available_since = NULL
           ${keyChanged ? ', addr_index = NULL, preshared_key = NULL' : ''}
         WHERE name = $6`,
    [input.publicKey, input.agentVersion, JSON.stringify(input.claims), input.now, status, input.cluster],
  );
  await tx.run('UPDATE agent_credentials SET revoked_at = $1 WHERE cluster = $2 AND revoked_at IS NULL', [
    input.now,
    input.cluster,
  ]);
  await tx.run(
    'INSERT INTO agent_credentials (id, cluster, hash, created_at, public_key) VALUES ($1, $2, $3, $4, $5)',
    [input.credential.id, input.cluster, input.credential.hash, input.now, input.publicKey],
  );
  const after = (await deps.cluster(tx, input.cluster))!;
  if (status === 'Accepted' && after.address === null)
    await allocateAddress(tx, input.cluster, input.presharedKey);
  const replacedPublicKey = keyChanged ? before.publicKey : null;
  return { ok: true, cluster: (await deps.cluster(tx, input.cluster))!, replacedPublicKey };
}
