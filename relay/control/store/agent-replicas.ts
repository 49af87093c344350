/**
 * Agent replicas: a cluster admits up to `agentReplicas` agent keys (MAX_AGENT_REPLICAS at most). The clusters row
 * holds the first key (the primary agent: every single-agent rule stays as it is), the cluster_agents table the
 * others, each with its own tunnel address, per-pair preshared key, credential and lease. The rules both stores
 * follow live here; the SQL in sqlite-agent-replicas.ts and postgres-agent-replicas.ts.
 */
import { TunnelError } from '../../../shared/errors.js';
import { addressOf } from './sqlite-rows.js';
import type { ClusterRecord } from './types.js';

export const MIN_AGENT_REPLICAS = 1;
export const MAX_AGENT_REPLICAS = 10;

/** One agent of a cluster: the primary (the clusters row) or a replica (a cluster_agents row). */
export interface ClusterAgentRecord {
  cluster: string;
  publicKey: string;
  /** 100.64.x.y once the cluster is Accepted. */
  address: string | null;
  /** Per-pair WireGuard preshared key (base64). Secret. */
  presharedKey: string | null;
  agentVersion: string | null;
  registeredAt: number | null;
  leaseRenewAt: number | null;
  availableSince: number | null;
  primary: boolean;
}

/** A cluster_agents row as both dialects select it. */
export interface ClusterAgentRow {
  public_key: string;
  cluster: string;
  addr_index: number | null;
  preshared_key: string | null;
  agent_version: string;
  registered_at: number;
  lease_renew_at: number | null;
  available_since: number | null;
}

export const CLUSTER_AGENT_COLS =
  'public_key, cluster, addr_index, preshared_key, agent_version, registered_at, lease_renew_at, available_since';

/** `n` as a replica count, or BAD_INPUT naming it. */
export function checkAgentReplicas(n: unknown, what = 'agentReplicas'): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < MIN_AGENT_REPLICAS || n > MAX_AGENT_REPLICAS) {
    throw new TunnelError(
      'AGENT_REPLICAS_INVALID',
      `${what} ${String(n)} is not valid: give a whole number ${MIN_AGENT_REPLICAS}..${MAX_AGENT_REPLICAS}`,
    );
  }
  return n;
}

/** The primary agent of a cluster record, or null when it has none registered. */
export function primaryAgentOf(c: ClusterRecord): ClusterAgentRecord | null {
  if (c.publicKey === null) return null;
  return {
    cluster: c.name,
    publicKey: c.publicKey,
    address: c.address,
    presharedKey: c.presharedKey,
    agentVersion: c.agentVersion,
    registeredAt: c.registeredAt,
    leaseRenewAt: c.leaseRenewAt,
    availableSince: c.availableSince,
    primary: true,
  };
}

/** The cluster as one of its replicas holds it: its key, address, preshared key, version and lease. */
export function clusterAsAgent(c: ClusterRecord, a: ClusterAgentRecord): ClusterRecord {
  return {
    ...c,
    publicKey: a.publicKey,
    address: a.address,
    presharedKey: a.presharedKey,
    agentVersion: a.agentVersion,
    registeredAt: a.registeredAt,
    leaseRenewAt: a.leaseRenewAt,
    availableSince: a.availableSince,
  };
}

/** Agents registered to the cluster: its primary and its replicas. */
export function registeredAgents(c: ClusterRecord): number {
  return (c.publicKey === null ? 0 : 1) + c.replicaAgents;
}

/**
 * Where a PSK registration of `publicKey` goes in a cluster of more than one replica: the primary slot (its key,
 * or no primary yet), a replica row (known or new while fewer than `replicas` are registered), or `full`.
 */
export type ReplicaSlot = 'primary' | 'replica' | 'full';

export function replicaSlot(p: {
  primaryKey: string | null;
  replicaKeys: readonly string[];
  publicKey: string;
  replicas: number;
}): ReplicaSlot {
  if (p.primaryKey === p.publicKey) return 'primary';
  if (p.replicaKeys.includes(p.publicKey)) return 'replica';
  const held = (p.primaryKey === null ? 0 : 1) + p.replicaKeys.length;
  if (held >= p.replicas) return 'full';
  return p.primaryKey === null ? 'primary' : 'replica';
}

/** How many distinct keys the cluster holds once `publicKey` is registered in `slot`. */
export function keysAfter(
  p: { primaryKey: string | null; replicaKeys: readonly string[] },
  slot: ReplicaSlot,
  publicKey: string,
): number {
  const keys = new Set(p.replicaKeys);
  if (p.primaryKey !== null) keys.add(p.primaryKey);
  if (slot !== 'full') keys.add(publicKey);
  return keys.size;
}

export function toClusterAgent(r: ClusterAgentRow): ClusterAgentRecord {
  return {
    cluster: r.cluster,
    publicKey: r.public_key,
    address: addressOf(r.addr_index === null ? null : Number(r.addr_index)),
    presharedKey: r.preshared_key,
    agentVersion: r.agent_version,
    registeredAt: Number(r.registered_at),
    leaseRenewAt: r.lease_renew_at === null ? null : Number(r.lease_renew_at),
    availableSince: r.available_since === null ? null : Number(r.available_since),
    primary: false,
  };
}

/** The cluster's agents, the primary first, then its replicas in the order they registered. */
export function agentsOf(c: ClusterRecord, replicas: readonly ClusterAgentRecord[]): ClusterAgentRecord[] {
  const primary = primaryAgentOf(c);
  const rest = [...replicas].sort((a, b) => (a.registeredAt ?? 0) - (b.registeredAt ?? 0));
  return primary === null ? rest : [primary, ...rest];
}
