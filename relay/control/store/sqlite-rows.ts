/** Row shapes of the SQLite tables and their mapping to store records. */
import { FIRST_AGENT_INDEX, indexToAddress, LAST_AGENT_INDEX } from './addresses.js';
import type { AccessKeyRecord, AuditRecord, ClusterRecord, ClusterStatus } from './types.js';

export interface ClusterRow {
  name: string;
  grp: string;
  display_name: string;
  status: string;
  created_at: number;
  status_changed_at: number;
  public_key: string | null;
  addr_index: number | null;
  preshared_key: string | null;
  agent_version: string | null;
  claims: string;
  registered_at: number | null;
  lease_renew_at: number | null;
  available_since: number | null;
  agent_reason: string | null;
  agent_replicas: number;
  replica_agents: number;
}

/** An audit row as both dialects select it (`detail` is the JSON text). */
export interface AuditRow {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  source: string;
  detail: string;
}

export function toAuditRecord(r: AuditRow): AuditRecord {
  return { ...r, detail: JSON.parse(r.detail) as Record<string, unknown> };
}

export interface KeyRow {
  id: string;
  role: string;
  description: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  minted_by: string | null;
  cluster_created_at: number | null;
  minted_role: string | null;
}

/**
 * The stored claims, or none when the column does not hold a JSON object of strings (a hand edit, a
 * damaged file): a bad row must not fail every read of the cluster list, the start among them.
 */
function parseClaims(text: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const claims: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) if (typeof v === 'string') claims[k] = v;
  return claims;
}

/** The tunnel address of a stored host number; null when the number is outside the agents' range. */
export function addressOf(index: number | null): string | null {
  if (index === null || !Number.isInteger(index) || index < FIRST_AGENT_INDEX || index > LAST_AGENT_INDEX) {
    return null;
  }
  return indexToAddress(index);
}

export function toCluster(r: ClusterRow): ClusterRecord {
  return {
    name: r.name,
    group: r.grp,
    displayName: r.display_name,
    status: r.status as ClusterStatus,
    createdAt: r.created_at,
    statusChangedAt: r.status_changed_at,
    publicKey: r.public_key,
    address: addressOf(r.addr_index),
    presharedKey: r.preshared_key,
    agentVersion: r.agent_version,
    claims: parseClaims(r.claims),
    registeredAt: r.registered_at,
    leaseRenewAt: r.lease_renew_at,
    availableSince: r.available_since,
    agentReason: r.agent_reason,
    agentReplicas: Number(r.agent_replicas),
    replicaAgents: Number(r.replica_agents),
  };
}

export function toKey(r: KeyRow): AccessKeyRecord {
  return {
    id: r.id,
    role: r.role,
    description: r.description,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    minted:
      r.cluster_created_at === null
        ? null
        : {
            by: r.minted_by,
            clusterCreatedAt: r.cluster_created_at,
            ...(r.minted_role === null ? {} : { role: r.minted_role }),
          },
  };
}

export const KEY_COLS =
  'id, role, description, created_at, expires_at, revoked_at, minted_by, cluster_created_at, minted_role';

/** The values of KEY_COLS for `key`, in that order. */
export function keyValues(key: AccessKeyRecord): Array<string | number | null> {
  return [
    key.id,
    key.role,
    key.description,
    key.createdAt,
    key.expiresAt,
    key.revokedAt,
    key.minted?.by ?? null,
    key.minted?.clusterCreatedAt ?? null,
    key.minted?.role ?? null,
  ];
}

export const CLUSTER_COLS =
  'name, grp, display_name, status, created_at, status_changed_at, public_key, addr_index, preshared_key, agent_version, claims, registered_at, lease_renew_at, available_since, agent_reason, agent_replicas, ' +
  '(SELECT COUNT(*) FROM cluster_agents ca WHERE ca.cluster = clusters.name) AS replica_agents';
