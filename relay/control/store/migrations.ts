/**
 * Schema migrations, applied in order on start inside one transaction each. Plain SQL that
 * PostgreSQL also accepts (TEXT, BIGINT, no SQLite-only types), so a pg store can reuse the list.
 */
import type Database from 'better-sqlite3';
import { TunnelError } from '../../../shared/errors.js';

export const MIGRATIONS: readonly string[] = [
  // 1: initial schema
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE clusters (
    name TEXT PRIMARY KEY,
    grp TEXT NOT NULL,
    display_name TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    status_changed_at BIGINT NOT NULL,
    public_key TEXT UNIQUE,
    addr_index BIGINT UNIQUE,
    preshared_key TEXT,
    agent_version TEXT,
    claims TEXT NOT NULL DEFAULT '{}',
    registered_at BIGINT,
    lease_renew_at BIGINT,
    available_since BIGINT,
    values_json TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX clusters_grp ON clusters (grp);
  CREATE TABLE psks (
    id TEXT PRIMARY KEY,
    cluster TEXT NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    revoked_at BIGINT
  );
  CREATE INDEX psks_cluster ON psks (cluster);
  CREATE TABLE agent_credentials (
    id TEXT PRIMARY KEY,
    cluster TEXT NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
  );
  CREATE INDEX agent_credentials_cluster ON agent_credentials (cluster);
  CREATE TABLE access_keys (
    id TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    description TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
  );
  CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    source TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  `,
  // 2: O(log n) address allocation: released host numbers in a free list, plus a high-water mark.
  `
  CREATE TABLE free_addresses (addr_index BIGINT PRIMARY KEY);
  CREATE TABLE address_pool (id INTEGER PRIMARY KEY CHECK (id = 1), high BIGINT NOT NULL);
  INSERT INTO address_pool (id, high) SELECT 1, COALESCE(MAX(addr_index), 1) FROM clusters;
  `,
  // 3: one-time install links, one per PSK (relay/control/model/install-link.ts); sealed is cleared when the link is used.
  `
  CREATE TABLE install_links (
    hash TEXT PRIMARY KEY,
    psk_id TEXT NOT NULL UNIQUE REFERENCES psks (id) ON DELETE CASCADE,
    sealed TEXT,
    used_at BIGINT
  );
  `,
  // 4: relay replicas sharing a PostgreSQL store (relay/fleet/mesh/): membership with heartbeats, and where each
  // agent's session is. Times are the database server's clock (ms), so replicas' clocks need not agree.
  // A SQLite store (one relay) keeps both tables empty.
  `
  CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    mesh_url TEXT NOT NULL,
    mode TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
  );
  CREATE TABLE agent_locations (
    cluster TEXT PRIMARY KEY REFERENCES clusters (name) ON DELETE CASCADE,
    replica TEXT NOT NULL,
    path TEXT NOT NULL,
    since BIGINT NOT NULL
  );
  CREATE INDEX agent_locations_replica ON agent_locations (replica);
  `,
  // 5: each agent's path as the hub holding its session reports it, so every replica shows the same.
  `
  CREATE TABLE agent_paths (
    cluster TEXT PRIMARY KEY REFERENCES clusters (name) ON DELETE CASCADE,
    path TEXT NOT NULL,
    remote TEXT,
    rtt_direct_us BIGINT,
    rtt_relayed_us BIGINT,
    last_switch_at BIGINT,
    reason TEXT,
    reported_at BIGINT NOT NULL
  );
  `,
  // 6: each agent's path changes, newest PATH_HISTORY_MAX kept (agent-path-row.ts).
  `
  CREATE TABLE agent_path_history (
    cluster TEXT NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    at BIGINT NOT NULL,
    path TEXT NOT NULL,
    remote TEXT,
    reason TEXT
  );
  CREATE INDEX agent_path_history_by_cluster ON agent_path_history (cluster, at);
  `,
  // 7: why the agent says its traffic is relayed (its lease renewals; relay/control/model/agent-reason.ts).
  `
  ALTER TABLE clusters ADD COLUMN agent_reason TEXT;
  `,
  // 8: who reported each path history entry's reason (agent or hub; path-history-row.ts). Entries written
  // before it hold the hub's reasons only.
  `
  ALTER TABLE agent_path_history ADD COLUMN reason_from TEXT;
  UPDATE agent_path_history SET reason_from = 'hub' WHERE reason IS NOT NULL;
  `,
  // 9: the bootstrap key whose registration created a cluster (Pending registrations are capped per key and in
  // all: pending-caps.ts), and the indexes the paged lists (keyset order, page-query.ts) and the audit's
  // retention read.
  `
  ALTER TABLE clusters ADD COLUMN bootstrap_key TEXT;
  CREATE INDEX clusters_pending_key ON clusters (status, bootstrap_key);
  CREATE INDEX clusters_status_name ON clusters (status, name);
  CREATE INDEX clusters_grp_name ON clusters (grp, name);
  CREATE INDEX access_keys_created ON access_keys (created_at, id);
  CREATE INDEX audit_at ON audit (at);
  CREATE INDEX audit_actor ON audit (actor, id);
  `,
  // 10: kubeconfig keys tied to the key that minted them (live ones capped per minting key) and to the cluster they
  // were minted for, by its creation time: a key never reaches a later cluster that reuses the name. A kubeconfig
  // key minted before this version is tied to its cluster when the cluster is older than the key; a key whose
  // cluster is gone or newer (deleted and created again) could only reach the wrong cluster and is deleted. The
  // indexes serve the live-key count, the retention of ended keys and the revocation of a deleted cluster's keys
  // (store/access-key-caps.ts).
  `
  ALTER TABLE access_keys ADD COLUMN minted_by TEXT;
  ALTER TABLE access_keys ADD COLUMN cluster_created_at BIGINT;
  UPDATE access_keys SET cluster_created_at = (SELECT c.created_at FROM clusters c
      WHERE c.name = substr(access_keys.role, 15) AND c.created_at <= access_keys.created_at)
    WHERE role LIKE 'cluster-proxy:%';
  UPDATE access_keys SET cluster_created_at = (SELECT c.created_at FROM clusters c
      WHERE c.name = substr(access_keys.role, 20) AND c.created_at <= access_keys.created_at)
    WHERE role LIKE 'cluster-proxy-read:%';
  DELETE FROM access_keys
    WHERE (role LIKE 'cluster-proxy:%' OR role LIKE 'cluster-proxy-read:%') AND cluster_created_at IS NULL;
  CREATE INDEX access_keys_role ON access_keys (role);
  CREATE INDEX access_keys_minted_by ON access_keys (minted_by);
  CREATE INDEX access_keys_expires ON access_keys (expires_at);
  CREATE INDEX access_keys_revoked ON access_keys (revoked_at);
  `,
  // 11: the role of the key that minted a kubeconfig key: the group the relay impersonates its caller in on the
  // cluster (relay/data/proxy/caller-identity.ts). Session audit rows are filtered by cluster (target) and kind (action).
  `
  ALTER TABLE access_keys ADD COLUMN minted_role TEXT;
  CREATE INDEX audit_target ON audit (target, id);
  `,
  // 12: agent replicas. A cluster admits up to agent_replicas agent keys; the clusters row holds the first (its
  // primary agent), cluster_agents the others, each with its own tunnel address, per-pair key and lease. A
  // credential names the key it was issued to (the primary's live credentials get its key).
  `
  ALTER TABLE clusters ADD COLUMN agent_replicas INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE agent_credentials ADD COLUMN public_key TEXT;
  UPDATE agent_credentials SET public_key = (SELECT c.public_key FROM clusters c WHERE c.name = agent_credentials.cluster)
    WHERE revoked_at IS NULL;
  CREATE TABLE cluster_agents (
    public_key TEXT PRIMARY KEY,
    cluster TEXT NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    addr_index BIGINT UNIQUE,
    preshared_key TEXT,
    agent_version TEXT NOT NULL,
    registered_at BIGINT NOT NULL,
    lease_renew_at BIGINT,
    available_since BIGINT
  );
  CREATE INDEX cluster_agents_cluster ON cluster_agents (cluster);
  `,
  // 13: where each agent's session is, by agent key (relay/fleet/mesh/): the agents of one cluster may be held by
  // different replicas of a fleet. agent_locations (by cluster) is no longer written; a relay of version 12 still
  // running during a rolling upgrade keeps its own rows there. A SQLite store (one relay) keeps the table empty.
  `
  CREATE TABLE agent_sessions (
    public_key TEXT PRIMARY KEY,
    cluster TEXT NOT NULL REFERENCES clusters (name) ON DELETE CASCADE,
    replica TEXT NOT NULL,
    path TEXT NOT NULL,
    since BIGINT NOT NULL
  );
  CREATE INDEX agent_sessions_cluster ON agent_sessions (cluster);
  CREATE INDEX agent_sessions_replica ON agent_sessions (replica);
  `,
  // 14: when the agent of a session began draining (its GoAway: SIGTERM), null while it takes new streams; other
  // replicas send it no request hop meanwhile (relay/fleet/mesh/mesh-routing.ts).
  `
  ALTER TABLE agent_sessions ADD COLUMN draining_since BIGINT;
  `,
];

/** Applies the missing migrations, each in its own transaction; refuses a newer schema. */
export function applyMigrations(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT)');
  const have =
    (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  if (have > MIGRATIONS.length) {
    throw new TunnelError(
      'BAD_CONFIG',
      `store: the database has schema version ${have}, newer than this relay (${MIGRATIONS.length}); upgrade the relay`,
    );
  }
  for (let v = have + 1; v <= MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v - 1]!);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, Date.now());
    })();
  }
}
