/**
 * The replica mesh's tables in a PostgreSQL store (migrations 4 and 13): the fleet identity (in meta), replica
 * membership rows with heartbeats, and agent locations (agent key -> replica, agent_sessions: the agents of one
 * cluster may be on different replicas; migration 14 marks a draining agent's). Every time here is the database
 * server's clock in milliseconds (`clock_timestamp()`), so replicas whose clocks disagree still agree on who is
 * alive. A location whose replica has no fresh heartbeat is never returned.
 */
import { TunnelError } from '../../../shared/errors.js';
import type { Tx } from './postgres-tx.js';

/** What a fleet of replicas must share: the hub's public key and the pin of the TLS certificate. */
export interface FleetIdentity {
  /** Base64 WireGuard public key of the hub. */
  hubPublicKey: string;
  /** `sha256:<hex>` of the TLS certificate the replicas serve; `none` behind a terminator with no CA file. */
  caPin: string;
}

export interface ReplicaRow {
  id: string;
  meshUrl: string;
  mode: string;
  startedAt: number;
  heartbeatAt: number;
}

export interface AgentLocation {
  cluster: string;
  /** Base64 WireGuard public key of the agent. */
  publicKey: string;
  replica: string;
  meshUrl: string;
  path: string;
  since: number;
}

/**
 * A drain mark older than this is ignored: an agent drains for 20 s at the most before its session ends and its
 * row goes, so a mark this old was left by a replica that did not clear it (one of the previous version in a
 * rolling upgrade, say).
 */
export const DRAIN_MARK_MS = 60_000;

/** Most replica rows a store holds (live or not yet pruned); a replica past it is refused at start. */
export const MAX_REPLICAS = 64;
/** Rows of replicas silent this many times the dead-after time are deleted by the next heartbeat of another. */
const PRUNE_FACTOR = 12;

const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
const FLEET_KEY = 'fleet-identity';

export interface PgMeshTablesOptions {
  db: () => Promise<Tx>;
  serializable: <T>(body: (tx: Tx) => Promise<T>) => Promise<T>;
}

function toReplica(r: {
  id: string;
  mesh_url: string;
  mode: string;
  started_at: string | number;
  heartbeat_at: string | number;
}): ReplicaRow {
  return {
    id: r.id,
    meshUrl: r.mesh_url,
    mode: r.mode,
    startedAt: Number(r.started_at),
    heartbeatAt: Number(r.heartbeat_at),
  };
}

export class PgMeshTables {
  readonly #connection: PgMeshTablesOptions['db'];
  readonly #serializable: PgMeshTablesOptions['serializable'];

  constructor(o: PgMeshTablesOptions) {
    this.#connection = o.db;
    this.#serializable = o.serializable;
  }

  /** Stores `mine` as the fleet identity unless one is stored; returns the stored one. */
  async claimFleet(mine: FleetIdentity): Promise<FleetIdentity> {
    const db = await this.#connection();
    await db.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      FLEET_KEY,
      JSON.stringify(mine),
    ]);
    const row = await db.one<{ value: string }>('SELECT value FROM meta WHERE key = $1', [FLEET_KEY]);
    const stored = JSON.parse(row!.value) as Partial<FleetIdentity>;
    return { hubPublicKey: String(stored.hubPublicKey), caPin: String(stored.caPin) };
  }

  /** The fleet identity the first hub replica stored, or null before one started (read only: relay mode). */
  async fleet(): Promise<FleetIdentity | null> {
    const db = await this.#connection();
    const row = await db.one<{ value: string }>('SELECT value FROM meta WHERE key = $1', [FLEET_KEY]);
    if (!row) return null;
    const stored = JSON.parse(row.value) as Partial<FleetIdentity>;
    return { hubPublicKey: String(stored.hubPublicKey), caPin: String(stored.caPin) };
  }

  /**
   * Adds this replica's row (LIMIT_EXCEEDED when MAX_REPLICAS rows are held after pruning the long-dead ones).
   * Returns the database time it was written.
   */
  async join(r: { id: string; meshUrl: string; mode: string }, deadAfterMs: number): Promise<number> {
    return this.#serializable(async (tx) => {
      await tx.run(`DELETE FROM replicas WHERE heartbeat_at < ${NOW_MS} - $1`, [deadAfterMs * PRUNE_FACTOR]);
      const { n } = (await tx.one<{ n: string }>('SELECT COUNT(*) AS n FROM replicas'))!;
      if (Number(n) >= MAX_REPLICAS) {
        throw new TunnelError('LIMIT_EXCEEDED', `replicas: the store already holds ${MAX_REPLICAS}`);
      }
      const row = await tx.one<{ now: string }>(
        `INSERT INTO replicas (id, mesh_url, mode, started_at, heartbeat_at) VALUES ($1, $2, $3, ${NOW_MS}, ${NOW_MS})
         RETURNING heartbeat_at AS now`,
        [r.id, r.meshUrl, r.mode],
      );
      return Number(row!.now);
    });
  }

  /** Renews the heartbeat; false when the row is gone (pruned while this replica was cut off). */
  async heartbeat(id: string): Promise<boolean> {
    const db = await this.#connection();
    return (await db.run(`UPDATE replicas SET heartbeat_at = ${NOW_MS} WHERE id = $1`, [id])) === 1;
  }

  /** Removes the replica's row and the locations it held (clean shutdown). */
  async leave(id: string): Promise<void> {
    const db = await this.#connection();
    await db.run('DELETE FROM agent_sessions WHERE replica = $1', [id]);
    await db.run('DELETE FROM replicas WHERE id = $1', [id]);
  }

  /** Replicas with a heartbeat within `deadAfterMs`. */
  async liveReplicas(deadAfterMs: number): Promise<ReplicaRow[]> {
    const rows = await (await this.#connection()).all<Parameters<typeof toReplica>[0]>(
      `SELECT id, mesh_url, mode, started_at, heartbeat_at FROM replicas WHERE heartbeat_at >= ${NOW_MS} - $1 ORDER BY started_at, id`,
      [deadAfterMs],
    );
    return rows.map(toReplica);
  }

  /** Records that the agent `publicKey` of `cluster` is on `replica` now (the latest writer wins). */
  async setLocation(l: { cluster: string; publicKey: string; replica: string; path: string }): Promise<void> {
    await (await this.#connection()).run(
      `INSERT INTO agent_sessions (public_key, cluster, replica, path, since) SELECT $1, $2, $3, $4, ${NOW_MS}
       WHERE EXISTS (SELECT 1 FROM clusters WHERE name = $2)
       ON CONFLICT (public_key) DO UPDATE SET cluster = excluded.cluster, replica = excluded.replica,
         path = excluded.path,
         since = CASE WHEN agent_sessions.replica = excluded.replica THEN agent_sessions.since ELSE excluded.since END,
         draining_since = CASE WHEN agent_sessions.replica = excluded.replica THEN agent_sessions.draining_since END`,
      [l.publicKey, l.cluster, l.replica, l.path],
    );
  }

  /**
   * Marks the agent's session on `replica` draining (it takes no new streams: no replica sends it a hop) or taking
   * streams again (its next run is up); nothing when another replica holds it now.
   */
  async markDraining(l: { publicKey: string; replica: string; draining: boolean }): Promise<void> {
    await (await this.#connection()).run(
      `UPDATE agent_sessions SET draining_since = CASE WHEN $3 THEN ${NOW_MS} END
       WHERE public_key = $1 AND replica = $2`,
      [l.publicKey, l.replica, l.draining],
    );
  }

  /** Clears the agent's location if `replica` still holds it. */
  async clearLocation(publicKey: string, replica: string): Promise<void> {
    await (await this.#connection()).run(
      'DELETE FROM agent_sessions WHERE public_key = $1 AND replica = $2',
      [publicKey, replica],
    );
  }

  /**
   * Where the cluster's agents that take new streams are, those on a live replica (oldest session first): an agent
   * marked draining within DRAIN_MARK_MS is left out.
   */
  async locate(cluster: string, deadAfterMs: number): Promise<AgentLocation[]> {
    return this.#locations(
      `l.cluster = $2 AND (l.draining_since IS NULL OR l.draining_since < ${NOW_MS} - ${DRAIN_MARK_MS})`,
      [deadAfterMs, cluster],
    );
  }

  /** Every location held by a live replica other than `self`, draining or not (the agents' status). */
  async remoteLocations(self: string, deadAfterMs: number): Promise<AgentLocation[]> {
    return this.#locations('l.replica <> $2', [deadAfterMs, self]);
  }

  async #locations(where: string, params: unknown[]): Promise<AgentLocation[]> {
    const rows = await (await this.#connection()).all<{
      cluster: string;
      public_key: string;
      replica: string;
      mesh_url: string;
      path: string;
      since: string;
    }>(
      `SELECT l.cluster, l.public_key, l.replica, r.mesh_url, l.path, l.since FROM agent_sessions l
       JOIN replicas r ON r.id = l.replica WHERE r.heartbeat_at >= ${NOW_MS} - $1 AND ${where}
       ORDER BY l.since, l.public_key`,
      params,
    );
    return rows.map((r) => ({
      cluster: r.cluster,
      publicKey: r.public_key,
      replica: r.replica,
      meshUrl: r.mesh_url,
      path: r.path,
      since: Number(r.since),
    }));
  }
}
