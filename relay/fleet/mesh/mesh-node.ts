/**
 * This replica's place in a fleet's mesh: its id, the fleet's mesh key and CA pin, its membership (heartbeat and
 * agent locations, replica-membership.ts), and `locate`, which names the sessions of a cluster's agents that live
 * replicas other than this one hold. The proxies ask it only for a client's request whose agent has no session
 * here; a mesh request is always served locally (one hop, no loops).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { RelayHooks } from '../../control/model/hooks.js';
import { type AgentLocation, MAX_REPLICAS, type PgMeshTables } from '../../control/store/postgres-mesh.js';
import type { MeshConfig, MeshKey } from '../../ops/config/mesh-settings.js';
import type { MeshAuthStats } from './mesh-auth.js';
import { dialReplica, isRefusal } from './mesh-dial.js';
import type { ForwardKind, MeshHop } from './mesh-forward.js';
import { meshHeaders, requestSource } from './mesh-source.js';
import { ReplicaMembership } from './replica-membership.js';

export type { ForwardKind } from './mesh-forward.js';

/** Counters of the mesh (exported on /metrics by the proxy plugin). */
export interface MeshStats {
  auth: MeshAuthStats;
  /** Requests forwarded to another replica, by kind. */
  forwarded: Record<ForwardKind, number>;
  /** Forwards that failed before the other replica answered (dial, TLS, pin). */
  failed: number;
  /** Forwarded pipes open now. */
  open: number;
  /** Live replicas (this one included) at the last heartbeat; 0 without a mesh. */
  replicas: number;
}

export function newMeshStats(): MeshStats {
  return {
    auth: { accepted: 0, refused: 0 },
    forwarded: { connect: 0, upgrade: 0, request: 0 },
    failed: 0,
    open: 0,
    replicas: 0,
  };
}

export interface MeshNodeOptions {
  tables: PgMeshTables;
  config: MeshConfig & { key: MeshKey };
  /** The fleet's CA pin: every replica's certificate must hash to it. */
  caPin: string;
  hooks: RelayHooks;
  log: Logger;
}

export class MeshNode {
  /** Random per process (not secret): a restarted replica is a new member. */
  readonly id = randomBytes(8).toString('hex');
  readonly key: MeshKey;
  readonly caPin: string;
  readonly stats = newMeshStats();
  readonly #tables: PgMeshTables;
  readonly #deadAfterMs: number;
  readonly #url: string | null;
  readonly #membership: ReplicaMembership;
  /**
   * Replicas a dial found not listening, by id, with when (Date.now()): locate leaves them out for dead-after,
   * by when the store has dropped a dead one. At most MAX_REPLICAS (the store holds no more).
   */
  readonly #refused = new Map<string, number>();
  #meshUrl: string | null = null;

  constructor(o: MeshNodeOptions) {
    this.key = o.config.key;
    this.caPin = o.caPin;
    this.#tables = o.tables;
    this.#deadAfterMs = o.config.deadAfterMs;
    this.#url = o.config.url;
    this.#membership = new ReplicaMembership({
      id: this.id,
      mode: 'hub',
      tables: o.tables,
      hooks: o.hooks,
      deadAfterMs: o.config.deadAfterMs,
      log: o.log.child({ component: 'mesh' }),
      onHeartbeat: (view) => {
        this.stats.replicas = view.replicas.length;
      },
    });
  }

  /** The URL other replicas dial (known once the TLS port is bound). */
  get meshUrl(): string | null {
    return this.#meshUrl;
  }

  /** Joins the fleet: `boundUrl` is the mesh URL unless --mesh-url named one. */
  async start(boundUrl: string): Promise<void> {
    this.#meshUrl = this.#url ?? boundUrl;
    await this.#membership.start(this.#meshUrl);
  }

  stop(): Promise<void> {
    return this.#membership.stop();
  }

  /** The sessions of the cluster's agents that live replicas other than this one hold (empty: none). */
  async locate(cluster: string): Promise<AgentLocation[]> {
    const all = await this.#tables.locate(cluster, this.#deadAfterMs);
    return all.filter((l) => l.replica !== this.id && !this.#isRefused(l.replica));
  }

  /**
   * A TLS connection to the replica at `l`, its certificate checked against the fleet pin. A replica that refuses
   * the connection is left out of locate from then on (isRefusal).
   */
  dial(l: AgentLocation): Promise<TLSSocket> {
    return dialReplica({ meshUrl: l.meshUrl, cluster: l.cluster }, this.caPin).catch((err: unknown) => {
      this.stats.failed++;
      if (isRefusal(err)) this.#markRefused(l.replica);
      throw err;
    });
  }

  #isRefused(replica: string): boolean {
    const at = this.#refused.get(replica);
    if (at === undefined) return false;
    if (Date.now() - at < this.#deadAfterMs) return true;
    this.#refused.delete(replica);
    return false;
  }

  /** Marks `replica` refused now; the map keeps marks oldest first, so past the cap the oldest goes. */
  #markRefused(replica: string): void {
    this.#refused.delete(replica);
    if (this.#refused.size >= MAX_REPLICAS) this.#refused.delete(this.#refused.keys().next().value ?? '');
    this.#refused.set(replica, Date.now());
  }

  /** The hop of a client's request `req` to the replica at `l`, naming the client's address. */
  hopTo(l: AgentLocation, req: IncomingMessage): MeshHop {
    return {
      dial: () => this.dial(l),
      headers: meshHeaders(this.key, requestSource(this.key, req), null),
      stats: this.stats,
    };
  }
}
