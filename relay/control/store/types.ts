/**
 * The one store interface every route uses. Methods are domain operations, each atomic on its own
 * (one transaction for every multi-row change, with its audit row in the same transaction), and
 * asynchronous, so a PostgreSQL implementation can follow without touching the routes. Times are
 * wall-clock milliseconds since the epoch, given by the caller (the injected clock); no method
 * reads the time itself.
 */
import type { ClusterAgentRecord } from './agent-replicas.js';
import type { PskSummary, RegistrationRefusal } from './psk-refusal.js';

export type ClusterStatus = 'Pending' | 'Accepted' | 'Denied';

export interface ClusterRecord {
  name: string;
  group: string;
  displayName: string;
  status: ClusterStatus;
  createdAt: number;
  /** When `status` last changed. */
  statusChangedAt: number;
  /** Agent's WireGuard public key (base64) once registered. */
  publicKey: string | null;
  /** Agent's tunnel address (100.64.x.y) once accepted and registered. */
  address: string | null;
  /** Per-pair WireGuard preshared key (base64), issued with the address. Secret. */
  presharedKey: string | null;
  agentVersion: string | null;
  claims: Record<string, string>;
  registeredAt: number | null;
  leaseRenewAt: number | null;
  /** Start of the current unbroken run of fresh leases (Available=True's lastTransitionTime). */
  availableSince: number | null;
  /**
   * Why the agent says its traffic is relayed (a code of AGENT_REASONS, from its last lease renewal), null when
   * its last renewal reported none.
   */
  agentReason: string | null;
  /** Agent keys the cluster admits (store/agent-replicas.ts); the fields above are its primary agent's. */
  agentReplicas: number;
  /** Agents registered beside the primary (its replicas: Store.listAgents lists them). */
  replicaAgents: number;
}

export interface NewCluster {
  name: string;
  group: string;
  displayName: string;
  createdAt: number;
  /** Agent keys the cluster's PSK admits (default 1). */
  agentReplicas?: number;
}

export interface NewSecret {
  /** Random public id (not secret). */
  id: string;
  /** SHA-256 hex of the secret. */
  hash: string;
  expiresAt: number | null;
  /** Bootstrap PSKs only: the PSK's one-time install link, stored with it in the same transaction. */
  install?: NewInstallLink;
}

/** A one-time install link of a PSK (relay/control/model/install-link.ts); it lives and dies with the PSK. */
export interface NewInstallLink {
  /** SHA-256 hex of the link's token. */
  hash: string;
  /** The PSK sealed under a key derived from the token (base64url). */
  sealed: string;
}

export type TakeInstallResult =
  | { ok: true; cluster: string; pskId: string; sealed: string; expiresAt: number }
  | { ok: false; reason: 'unknown' }
  /** used: fetched before; expired: its PSK expired, was replaced or was used. */
  | { ok: false; reason: 'used' | 'expired'; cluster: string };

export interface AccessKeyRecord {
  id: string;
  role: string;
  description: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** What a kubeconfig key (role `cluster-proxy:NAME` or `cluster-proxy-read:NAME`) is tied to; null for other keys. */
  minted: KeyMinting | null;
}

/** A kubeconfig key's ties (POST /api/v1/clusters/:name/kubeconfig). */
export interface KeyMinting {
  /**
   * Id of the access key that minted it (its live kubeconfig keys count against maxLiveKeysPerMinter); null for a
   * key minted before the store recorded it (schema version 10).
   */
  by: string | null;
  /**
   * createdAt of the cluster it was minted for: the key reaches that cluster only, never a later cluster that
   * reuses the name.
   */
  clusterCreatedAt: number;
  /**
   * Role of the access key that minted it (`admin`, `viewer`, `group-editor:G`): the caller's group when the relay
   * impersonates it on the cluster (relay/data/proxy/caller-identity.ts). Absent for a key minted before schema version 11.
   */
  role?: string;
}

/** How createAccessKey applies the caps. */
export interface CreateKeyOptions {
  /** `exempt`: the offline recovery and first-start admin key (relay/start/admin-key.ts), never refused by a cap. */
  cap: 'enforce' | 'exempt';
}

/** An agent key that stopped being allowed, as another replica reports it (Store.onRemoteKeyLoss). */
export interface RemoteKeyLoss {
  kind: 'cluster-deleted' | 'cluster-denied' | 'agent-unjoined';
  cluster: string;
  /** Base64 WireGuard public key of the agent that lost access. */
  publicKey: string;
}

export type RevokeKeyResult = 'revoked' | 'not-found' | 'last-admin';

export interface AuditEntry {
  at: number;
  /** Key id, `agent:<cluster>`, `psk:<cluster>`, `bootstrap:<key id>`, `system` or `local` (offline admin-key create). */
  actor: string;
  action: string;
  target: string;
  /** Source address of the request (`local` for the offline admin-key command). */
  source: string;
  detail: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: number;
}

export interface RegisterInput {
  cluster: string;
  publicKey: string;
  agentVersion: string;
  claims: Record<string, string>;
  now: number;
  /** The agent credential issued by this registration (any earlier one is revoked). */
  credential: NewSecret;
  /** Preshared key to issue if the registration is accepted now (or later, on accept). */
  presharedKey: string;
  via: { kind: 'psk'; pskHash: string } | { kind: 'bootstrap'; keyId: string; group: string };
}

export type RegisterResult =
  /** `replacedPublicKey`: the cluster's previous agent key when this registration replaced it. */
  | { ok: true; cluster: ClusterRecord; replacedPublicKey: string | null }
  /** PSK wrong (unknown or for another cluster), used, expired or revoked: `why` is for the audit log only. */
  | { ok: false; reason: 'rejected'; why: RegistrationRefusal }
  /** Bootstrap registration for a name that is taken (by another key, or not Pending). */
  | { ok: false; reason: 'conflict' }
  | { ok: false; reason: 'key-in-use' }
  /** A new key for a cluster that already holds its `max` agent keys (store/agent-replicas.ts). */
  | { ok: false; reason: 'replicas-full'; max: number }
  /**
   * A bootstrap registration that would create a cluster while its key (`scope` key) or the relay (`relay`) already
   * holds `max` Pending clusters created by registrations (StoreLimits).
   */
  | { ok: false; reason: 'pending-cap'; scope: 'key' | 'relay'; max: number };

export interface AgentIdentity {
  credentialId: string;
  cluster: string;
  status: ClusterStatus;
  /** The agent key the credential was issued to (null for a credential issued before credentials named keys). */
  publicKey: string | null;
}

export interface LeaseInput {
  now: number;
  /** The renewing agent's key: a replica's renews its own lease (store/agent-replicas.ts), else the primary's. */
  publicKey?: string | null;
  /** A renewal later than renew + grace starts a new Available run. */
  graceMs: number;
  claims?: Record<string, string>;
  agentVersion?: string;
  /** The agent's relayed reason (relay/control/model/agent-reason.ts); every renewal replaces it (absent: none). */
  agentReason?: string | null;
}

export interface StoreLimits {
  maxClusters: number;
  /** Live (not revoked, not expired) access keys; keys minted exempt from it (CreateKeyOptions) are not refused. */
  maxAccessKeys: number;
  /** Live kubeconfig keys minted by one access key. */
  maxLiveKeysPerMinter: number;
  /** Ended (revoked or expired) access keys kept within their retention; past it, those that ended first go. */
  maxEndedAccessKeys: number;
  /** Audit rows kept before the oldest are pruned; only rows older than `auditRetentionMs` are ever pruned. */
  maxAuditRows: number;
  /** Audit rows younger than this (by their `at`) are kept whatever their number. */
  auditRetentionMs: number;
  /** Pending clusters created by bootstrap-key registrations, in all (operators' `cluster create` not counted). */
  maxPendingRegistrations: number;
  /** Pending clusters created by the registrations of one bootstrap key. */
  maxPendingPerKey: number;
}

/** One page of a list in a stable order, and the key of its last item when more remain (`next`, else null). */
export interface Page<T, K> {
  items: T[];
  next: K | null;
}

/** Clusters by name (byte order), after `after` (exclusive), optionally of one group and one status. */
export interface ClusterPageQuery {
  limit: number;
  after: string | null;
  group?: string;
  status?: ClusterStatus;
}

/** Where an access key stands in the list's order (created, then id). */
export interface AccessKeyCursor {
  createdAt: number;
  id: string;
}

/** Audit rows newest first, older than row `before` (exclusive), optionally at or after `since` and of one actor. */
export interface AuditPageQuery {
  limit: number;
  before: number | null;
  since?: number;
  actor?: string;
  /** Only rows with this target (a cluster name for cluster and session rows). */
  target?: string;
  /** Only rows with this action (e.g. `session.exec`). */
  action?: string;
}

/** An agent's path as the hub holding its session last reported it (relay/control/model/path-reports.ts). */
export interface AgentPathRecord {
  cluster: string;
  path: 'direct' | 'relayed' | 'none';
  /** host:port of the agent's direct path while it is in use. */
  remote: string | null;
  rttDirectMs: number | null;
  rttRelayedMs: number | null;
  /** Wall-clock ms of the last switch of path (or of direct remote). */
  lastSwitchAt: number | null;
  /** Why the agent is not on the direct path (null while direct). */
  reason: string | null;
  /** When the hub wrote it (wall-clock ms); a row no hub refreshed for a while is stale. */
  reportedAt: number;
}

/** One change of an agent's path (path, direct remote or reason), as kept in its history. */
export interface PathChange {
  /** Wall-clock ms of the change. */
  at: number;
  path: 'direct' | 'relayed' | 'none';
  remote: string | null;
  /** The reason the path details showed (relay/control/store/path-reason.ts: the agent's own while relayed, else the hub's). */
  reason: string | null;
  /** Who reported `reason` (null with no reason). */
  reasonFrom: 'agent' | 'hub' | null;
}

/** How many agents are relayed with this pair of reasons (Store.relayedReasonCounts). */
export interface RelayedReasonCount {
  /** The reason in the hub's report (null: it gave none). */
  hubReason: string | null;
  /** The agent's reason from its last lease renewal (null: none). */
  agentReason: string | null;
  agents: number;
}

/** An accept or deny of a cluster (Store.setClusterStatus). */
export interface ClusterStatusChange {
  status: 'Accepted' | 'Denied';
  /** Wall-clock ms, stored as the status change's time when the status changes. */
  now: number;
  /** Stored with the address an accept allocates (a cluster with a key and no address yet). */
  presharedKey: string;
}

export interface Store {
  close(): Promise<void>;
  /** Throws if the store cannot answer (readiness). */
  ping(): Promise<void>;

  getMeta(key: string): Promise<string | null>;
  /** Sets `key` only if absent; returns true if it was set. */
  initMeta(key: string, value: string): Promise<boolean>;

  /** CONFLICT if the name is taken; LIMIT_EXCEEDED over maxClusters. */
  createCluster(c: NewCluster, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord>;
  getCluster(name: string): Promise<ClusterRecord | null>;
  /** The cluster's current bootstrap PSK (never the secret), or null when it has none. */
  currentPsk(cluster: string, now: number): Promise<PskSummary | null>;
  listClusters(filter?: { group?: string }): Promise<ClusterRecord[]>;
  /** At most `query.limit` clusters in name order, read in SQL with a keyset (no OFFSET). */
  clusterPage(query: ClusterPageQuery): Promise<Page<ClusterRecord, string>>;
  countClustersByStatus(): Promise<Record<string, number>>;
  /** Clusters whose lease was renewed at or after `sinceWall` (fresh leases, for metrics). */
  countLeasesSince(sinceWall: number): Promise<number>;
  /**
   * Accept or deny. On accept of a cluster with a registered key and no address, allocates the
   * address and stores `change.presharedKey`. Returns null if absent.
   */
  setClusterStatus(
    name: string,
    change: ClusterStatusChange,
    audit: AuditEntry,
  ): Promise<ClusterRecord | null>;
  /** Revokes every unused PSK of the cluster and adds `psk`. Null if the cluster is absent. */
  rotatePsk(name: string, psk: NewSecret, audit: AuditEntry): Promise<ClusterRecord | null>;
  /**
   * Consumes the install link with token hash `hash` if it and its PSK are still good, atomically (of
   * two concurrent calls one gets it); the audit row is written only when it is taken.
   */
  takeInstallLink(hash: string, now: number, audit: AuditEntry): Promise<TakeInstallResult>;
  /**
   * Deletes the cluster with its PSKs (and their install links), credentials, values and address, and revokes
   * (at `audit.at`) every live access key scoped to it (`cluster-proxy:NAME`, `cluster-proxy-read:NAME`), in one
   * transaction; onAccessKeyRevoked listeners hear of each such key. Returns what was deleted.
   */
  deleteCluster(name: string, audit: AuditEntry): Promise<ClusterRecord | null>;

  /** Consumes the PSK (or checks the bootstrap key's cluster) and registers, atomically. */
  register(input: RegisterInput, audit: AuditEntry): Promise<RegisterResult>;
  findAgent(credentialHash: string): Promise<AgentIdentity | null>;
  /**
   * False if the cluster is absent or has no registered agent. A change of the agent's reason while its path is
   * relayed is a path change (pathHistory).
   */
  renewLease(cluster: string, lease: LeaseInput): Promise<boolean>;
  /**
   * Revokes the credential, frees the address, clears the key; status back to Pending when no agent remains.
   * `publicKey` naming one of the cluster's replicas removes that replica only (returned as the cluster it held).
   */
  unjoin(
    cluster: string,
    now: number,
    audit: AuditEntry,
    publicKey?: string | null,
  ): Promise<ClusterRecord | null>;
  /**
   * Cluster whose registered key is `publicKey` (base64); for a replica's key, the cluster as that replica holds it
   * (its key, address, preshared key, version and lease: store/agent-replicas.ts clusterAsAgent).
   */
  findClusterByKey(publicKey: string): Promise<ClusterRecord | null>;
  /** The cluster's agents (primary first, then its replicas), or every cluster's replicas and primaries. */
  listAgents(cluster?: string): Promise<ClusterAgentRecord[]>;
  /** Writes the agent's path (replacing the last one); nothing when the cluster does not exist. */
  saveAgentPath(path: AgentPathRecord): Promise<void>;
  /** The agents' paths as last written, every cluster's (`clusters` given: those clusters', where they have one). */
  agentPaths(clusters?: string | readonly string[]): Promise<AgentPathRecord[]>;
  /**
   * The cluster's path changes, newest first, at most PATH_HISTORY_MAX: saveAgentPath records them, and renewLease
   * when only the agent's reason changed while its report (fresh) says relayed (store/path-history-row.ts).
   */
  pathHistory(cluster: string): Promise<PathChange[]>;
  /** Agents whose report written at or after `sinceWall` says relayed, by their hub's and their own reason. */
  relayedReasonCounts(sinceWall: number): Promise<RelayedReasonCount[]>;

  /**
   * LIMIT_EXCEEDED over maxAccessKeys live keys, or over maxLiveKeysPerMinter for a kubeconfig key (unless
   * `options.cap` is `exempt`). Deletes the keys that ended more than ENDED_KEY_RETENTION_MS before
   * `key.createdAt` in the same transaction (store/access-key-caps.ts).
   */
  createAccessKey(
    key: AccessKeyRecord,
    hash: string,
    audit: AuditEntry,
    options?: CreateKeyOptions,
  ): Promise<void>;
  findAccessKey(hash: string): Promise<AccessKeyRecord | null>;
  listAccessKeys(): Promise<AccessKeyRecord[]>;
  /** At most `limit` access keys in list order (created, then id), after `after`. */
  accessKeyPage(query: {
    limit: number;
    after: AccessKeyCursor | null;
  }): Promise<Page<AccessKeyRecord, AccessKeyCursor>>;
  /**
   * Revokes the key unless it is absent or already revoked (`not-found`), or it is the last admin key
   * active at `now` (`last-admin`: the relay would have no administrator left).
   */
  revokeAccessKey(id: string, now: number, audit: AuditEntry): Promise<RevokeKeyResult>;
  /**
   * Calls `listener` with the key's id each time revokeAccessKey (or deleteCluster) revokes one, once the change is
   * committed, so holders of live connections opened with it can end them. A store shared by several
   * relay replicas tells every replica (e.g. PostgreSQL LISTEN/NOTIFY). Listeners must not throw.
   * Returns the function that removes the listener.
   */
  onAccessKeyRevoked(listener: (keyId: string) => void): () => void;
  /**
   * Calls `listener` when another relay replica sharing this store took an agent's key away (the cluster deleted
   * or denied, the agent unjoined or replaced by a new registration), once that change is committed, so this
   * replica can end the agent's sessions as the replica that made the change does. Changes made through this
   * store object are not reported (the caller acts on them itself); a store no other replica shares (SQLite)
   * never calls it. Listeners must not throw. Returns the function that removes the listener.
   */
  onRemoteKeyLoss(listener: (event: RemoteKeyLoss) => void): () => void;

  getPlatformValues(): Promise<Record<string, unknown>>;
  setPlatformValues(values: Record<string, unknown>, audit: AuditEntry): Promise<void>;
  /** Null if the cluster is absent. */
  getClusterValues(name: string): Promise<Record<string, unknown> | null>;
  setClusterValues(name: string, values: Record<string, unknown>, audit: AuditEntry): Promise<boolean>;

  appendAudit(entry: AuditEntry): Promise<void>;
  listAudit(limit: number): Promise<AuditRecord[]>;
  /** At most `query.limit` audit rows, newest first, read with a keyset on the row id. */
  auditPage(query: AuditPageQuery): Promise<Page<AuditRecord, number>>;
  /**
   * Calls `listener` when a prune of the audit log finds rows over `maxAuditRows` that it kept because they are
   * younger than `auditRetentionMs`, with how many. Listeners must not throw. Returns the function that removes it.
   */
  onAuditOverCap(listener: (keptOverCap: number) => void): () => void;
}
