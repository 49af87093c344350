/**
 * This replica's membership in the fleet (relay/control/store/postgres-mesh.ts): its row is added once the TLS port
 * listens, its heartbeat renewed every HEARTBEAT_MS, and the row removed with the locations it held on a clean
 * shutdown. A replica whose heartbeat is older than --mesh-dead-after is gone: the locations it held are ignored.
 *
 * Agent locations: each time this process's session of an agent comes up, goes down or changes path (RelayHooks
 * 'agent-connection-changed'), the agent's row is written (up: this replica, the latest writer wins) or cleared
 * (down: only while it still names this replica). One cluster's agents may be held by different replicas: each has
 * its own row. Changes are coalesced per agent and written in order by one loop, so the set of pending writes is
 * bounded by the number of agents the hub holds; a write the store refuses is kept (its latest state only) and
 * retried after the next heartbeat. An agent that drains ('agent-draining': its GoAway) has its row marked, so the
 * other replicas send it no request hop until its next run is up here (mesh-routing.ts).
 *
 * On every heartbeat the sessions the other live replicas hold are read back and handed to RelayHooks agent by
 * agent, so the cluster object (connected, state, each agent's connected) reads the same on every replica, a second
 * behind at most.
 */
import type { Logger } from 'pino';
import type {
  AgentConnectionChange,
  AgentDrainChange,
  ConnectionStatus,
  RelayHooks,
} from '../../control/model/hooks.js';
import type { AgentLocation, PgMeshTables, ReplicaRow } from '../../control/store/postgres-mesh.js';

export const HEARTBEAT_MS = 1_000;

/** What a heartbeat read: the live replicas (this one included) and where the other replicas' agents are. */
export interface FleetView {
  replicas: ReplicaRow[];
  locations: AgentLocation[];
}

export interface MembershipOptions {
  id: string;
  /** `hub`, or `relay` for a relay-mode replica (it holds no agent sessions: no hooks). */
  mode: string;
  tables: PgMeshTables;
  /** The hub's hooks: its sessions are written as locations, the others' shown; null on a relay-mode replica. */
  hooks: RelayHooks | null;
  deadAfterMs: number;
  log: Logger;
  /** Receives what each heartbeat read. */
  onHeartbeat?: (view: FleetView) => void;
}

function remoteStatus(l: AgentLocation): ConnectionStatus {
  const path = l.path === 'direct' ? 'direct' : 'relayed';
  return { connected: true, path, lastHandshake: null, rttMs: null, bytesIn: 0, bytesOut: 0 };
}

/** The other replicas' sessions by cluster, then agent key. */
function remoteSessions(locations: readonly AgentLocation[]): Map<string, Map<string, ConnectionStatus>> {
  const remote = new Map<string, Map<string, ConnectionStatus>>();
  for (const l of locations) {
    let agents = remote.get(l.cluster);
    if (!agents) {
      agents = new Map();
      remote.set(l.cluster, agents);
    }
    agents.set(l.publicKey, remoteStatus(l));
  }
  return remote;
}

/** What is left to write of one agent: its session's latest change, and whether it drains (undefined: no mark). */
interface PendingWrite {
  change: AgentConnectionChange | undefined;
  draining: boolean | undefined;
}

export class ReplicaMembership {
  readonly #options: MembershipOptions;
  /** Latest unwritten state per agent key: its session's change, then its drain mark. */
  readonly #pending = new Map<string, PendingWrite>();
  #meshUrl = '';
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #stopped = false;
  #joined = false;
  /** The last heartbeat failed (logged once per outage). */
  #failing = false;
  readonly #onChange = (c: AgentConnectionChange): void => {
    const before = this.#pending.get(c.publicKey);
    // A session that went down takes its drain mark with its row.
    this.#pending.set(c.publicKey, { change: c, draining: c.connected ? before?.draining : undefined });
    this.#flush();
  };
  readonly #onDraining = (d: AgentDrainChange): void => {
    const before = this.#pending.get(d.publicKey);
    if (before?.change?.connected === false) return;
    this.#pending.set(d.publicKey, { change: before?.change, draining: d.draining });
    this.#flush();
  };

  constructor(o: MembershipOptions) {
    this.#options = o;
  }

  /** Adds the row (LIMIT_EXCEEDED past the replica cap) and starts the heartbeat. */
  async start(meshUrl: string): Promise<void> {
    this.#meshUrl = meshUrl;
    await this.#options.tables.join(
      { id: this.#options.id, meshUrl, mode: this.#options.mode },
      this.#options.deadAfterMs,
    );
    this.#joined = true;
    this.#options.log.info({ replica: this.#options.id, meshUrl }, 'mesh: joined the fleet');
    this.#options.hooks?.on('agent-connection-changed', this.#onChange);
    this.#options.hooks?.on('agent-draining', this.#onDraining);
    this.#schedule();
  }

  /** Stops the heartbeat and removes the row and this replica's locations (best effort). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#options.hooks?.off('agent-connection-changed', this.#onChange);
    this.#options.hooks?.off('agent-draining', this.#onDraining);
    await this.#flushing;
    if (this.#joined) {
      await this.#options.tables.leave(this.#options.id).catch((err: Error) => {
        this.#options.log.warn({ err: err.message }, 'mesh: could not remove this replica from the store');
      });
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#beat(), HEARTBEAT_MS);
    this.#timer.unref();
  }

  async #beat(): Promise<void> {
    const { tables, id, deadAfterMs, hooks, log } = this.#options;
    try {
      if (!(await tables.heartbeat(id)) && !this.#stopped) {
        log.warn(
          { replica: id },
          'mesh: this replica was dropped from the store (no heartbeat for long); rejoining',
        );
        await tables.join({ id, meshUrl: this.#meshUrl, mode: this.#options.mode }, deadAfterMs);
      }
      const locations = await tables.remoteLocations(id, deadAfterMs);
      hooks?.setRemoteConnections(remoteSessions(locations));
      this.#options.onHeartbeat?.({ replicas: await tables.liveReplicas(deadAfterMs), locations });
      if (this.#failing) log.info({ replica: id }, 'mesh: heartbeat back');
      this.#failing = false;
      // Location writes that failed while the store was away are retried (only their latest state).
      this.#flush();
    } catch (err) {
      // Without fresh data, other replicas' sessions are not shown rather than shown stale.
      hooks?.setRemoteConnections(new Map());
      if (!this.#failing) log.warn({ err: (err as Error).message }, 'mesh: heartbeat failed');
      this.#failing = true;
    }
    this.#schedule();
  }

  #flush(): void {
    if (this.#flushing || this.#pending.size === 0) return;
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = null;
    });
  }

  /** Writes the pending changes in order; stops at the first the store refuses (kept for the next heartbeat). */
  async #drain(): Promise<void> {
    for (;;) {
      const first = this.#pending.entries().next();
      if (first.done) return;
      const [key, change] = first.value;
      this.#pending.delete(key);
      if (await this.#write(key, change)) continue;
      // Kept unless a newer change arrived meanwhile.
      if (!this.#pending.has(key)) this.#pending.set(key, change);
      return;
    }
  }

  /** Writes one agent's pending state; false when the store did not take it (logged, retried later). */
  async #write(publicKey: string, w: PendingWrite): Promise<boolean> {
    const { tables, id, log } = this.#options;
    const c = w.change;
    try {
      if (c?.connected)
        await tables.setLocation({ cluster: c.cluster, publicKey, replica: id, path: c.path });
      else if (c) await tables.clearLocation(publicKey, id);
      if (w.draining !== undefined)
        await tables.markDraining({ publicKey, replica: id, draining: w.draining });
      return true;
    } catch (err) {
      log.warn(
        { cluster: c?.cluster, err: (err as Error).message },
        'mesh: could not record the agent location; retried after the next heartbeat',
      );
      return false;
    }
  }
}
