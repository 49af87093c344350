/**
 * The PostgreSQL half of agent replicas (store/agent-replicas.ts), step for step the SQLite one
 * (sqlite-agent-replicas.ts). Called inside PostgresStore's SERIALIZABLE transactions.
 */
import {
  CLUSTER_AGENT_COLS,
  type ClusterAgentRecord,
  type ClusterAgentRow,
  clusterAsAgent,
  keysAfter,
  replicaSlot,
  toClusterAgent,
} from './agent-replicas.js';
import { allocateAddress, takeAddress } from './postgres-addresses.js';
import type { Tx } from './postgres-tx.js';
import type { ClusterRecord, LeaseInput, RegisterInput, RegisterResult } from './types.js';

export async function replicaRowsPg(tx: Tx, cluster?: string): Promise<ClusterAgentRecord[]> {
  const rows =
    cluster === undefined
      ? await tx.all<ClusterAgentRow>(`SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents`)
      : await tx.all<ClusterAgentRow>(`SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents WHERE cluster = $1`, [
          cluster,
        ]);
  return rows.map(toClusterAgent);
}

export async function replicaByKeyPg(tx: Tx, publicKey: string): Promise<ClusterAgentRecord | null> {
  const r = await tx.one<ClusterAgentRow>(
    `SELECT ${CLUSTER_AGENT_COLS} FROM cluster_agents WHERE public_key = $1`,
    [publicKey],
  );
  return r ? toClusterAgent(r) : null;
}

/** A PSK registration (the PSK checked: its row id, and whether its agents spent it) into a cluster of more than one replica. */
export async function registerReplicaInPgTx(
  tx: Tx,
  input: RegisterInput,
  psk: { id: string; spent: boolean },
  cluster: (tx: Tx, name: string) => Promise<ClusterRecord | null>,
): Promise<RegisterResult> {
  const c = (await cluster(tx, input.cluster))!;
  const replicaKeys = (await replicaRowsPg(tx, c.name)).map((r) => r.publicKey);
  const held = { primaryKey: c.publicKey, replicaKeys };
  const slot = replicaSlot({ ...held, publicKey: input.publicKey, replicas: c.agentReplicas });
  if (slot === 'full') return { ok: false, reason: 'replicas-full', max: c.agentReplicas };
  // A spent PSK (its agents all registered once) admits none but those agents again.
  const known = held.primaryKey === input.publicKey || held.replicaKeys.includes(input.publicKey);
  if (psk.spent && !known) return { ok: false, reason: 'rejected', why: 'used' };
  if (!psk.spent && keysAfter(held, slot, input.publicKey) >= c.agentReplicas) {
    await tx.run('UPDATE psks SET used_at = $1 WHERE id = $2', [input.now, psk.id]);
  }
  await tx.run(
    `UPDATE clusters SET status = 'Accepted',
       status_changed_at = CASE WHEN status = 'Accepted' THEN status_changed_at ELSE $1 END WHERE name = $2`,
    [input.now, c.name],
  );
  if (slot === 'primary') {
    await tx.run(
      `UPDATE clusters SET public_key = $1, agent_version = $2, claims = $3, registered_at = $4,
         lease_renew_at = NULL, available_since = NULL WHERE name = $5`,
      [input.publicKey, input.agentVersion, JSON.stringify(input.claims), input.now, c.name],
    );
    if ((await cluster(tx, c.name))!.address === null) await allocateAddress(tx, c.name, input.presharedKey);
  } else {
    await upsertReplicaPg(tx, input);
  }
  await replaceCredentialPg(tx, input, slot === 'primary');
  const after = (await cluster(tx, c.name))!;
  if (slot === 'primary') return { ok: true, cluster: after, replacedPublicKey: null };
  const replica = (await replicaByKeyPg(tx, input.publicKey))!;
  return { ok: true, cluster: clusterAsAgent(after, replica), replacedPublicKey: null };
}

async function upsertReplicaPg(tx: Tx, input: RegisterInput): Promise<void> {
  const changed = await tx.run(
    `UPDATE cluster_agents SET agent_version = $1, registered_at = $2, lease_renew_at = NULL, available_since = NULL
       WHERE public_key = $3`,
    [input.agentVersion, input.now, input.publicKey],
  );
  if (changed > 0) return;
  await tx.run(
    `INSERT INTO cluster_agents (public_key, cluster, addr_index, preshared_key, agent_version, registered_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      input.publicKey,
      input.cluster,
      await takeAddress(tx),
      input.presharedKey,
      input.agentVersion,
      input.now,
    ],
  );
}

async function replaceCredentialPg(tx: Tx, input: RegisterInput, primary: boolean): Promise<void> {
  await tx.run(
    `UPDATE agent_credentials SET revoked_at = $1 WHERE cluster = $2 AND revoked_at IS NULL
       AND (public_key = $3 OR ($4 AND public_key IS NULL))`,
    [input.now, input.cluster, input.publicKey, primary],
  );
  await tx.run(
    'INSERT INTO agent_credentials (id, cluster, hash, created_at, public_key) VALUES ($1, $2, $3, $4, $5)',
    [input.credential.id, input.cluster, input.credential.hash, input.now, input.publicKey],
  );
}

/** Renews a replica's lease; false when the key is no replica of the cluster. */
export async function renewReplicaPg(
  tx: Tx,
  cluster: string,
  publicKey: string,
  lease: LeaseInput,
): Promise<boolean> {
  const changed = await tx.run(
    `UPDATE cluster_agents SET lease_renew_at = $1,
       available_since = CASE WHEN lease_renew_at IS NULL OR available_since IS NULL
         OR $1 >= lease_renew_at + $2 THEN $1 ELSE available_since END,
       agent_version = COALESCE($3, agent_version)
     WHERE cluster = $4 AND public_key = $5`,
    [lease.now, lease.graceMs, lease.agentVersion ?? null, cluster, publicKey],
  );
  return changed === 1;
}

/** Removes a replica: its credentials revoked, its address freed. False when the key is no replica of the cluster. */
export async function unjoinReplicaPg(
  tx: Tx,
  p: { cluster: string; publicKey: string; now: number },
): Promise<boolean> {
  const r = await replicaByKeyPg(tx, p.publicKey);
  if (!r || r.cluster !== p.cluster) return false;
  await tx.run('UPDATE agent_credentials SET revoked_at = $1 WHERE public_key = $2 AND revoked_at IS NULL', [
    p.now,
    p.publicKey,
  ]);
  await tx.run(
    `INSERT INTO free_addresses (addr_index) SELECT addr_index FROM cluster_agents
       WHERE public_key = $1 AND addr_index IS NOT NULL ON CONFLICT DO NOTHING`,
    [p.publicKey],
  );
  await tx.run('DELETE FROM cluster_agents WHERE public_key = $1', [p.publicKey]);
  return true;
}

/** Frees the addresses of the cluster's replicas (before the cluster's delete cascades to their rows). */
export async function releaseReplicaAddressesPg(tx: Tx, cluster: string): Promise<void> {
  await tx.run(
    `INSERT INTO free_addresses (addr_index) SELECT addr_index FROM cluster_agents
       WHERE cluster = $1 AND addr_index IS NOT NULL ON CONFLICT DO NOTHING`,
    [cluster],
  );
}
