/**
 * Each cluster's live connection status, kept in memory: it describes this process's sessions, and is bounded by
 * the number of clusters. In a fleet of replicas the sessions other replicas hold are merged in (setRemote, from
 * the store's agent locations, agent by agent: one cluster's agents may be on different replicas). Changes are told
 * on the relay's event bus (connection-changed and agent-connection-changed for this process's sessions,
 * connection-reported for any).
 */
import type { EventEmitter } from 'node:events';
import { AgentConnections, clusterOfAgents } from './agent-connections.js';
import { type ConnectionStatus, NO_CONNECTION } from './connection-status.js';
import type { RelayEvents } from './relay-events.js';

/** The sessions other replicas of a fleet hold: cluster -> agent key -> status. */
export type RemoteSessions = ReadonlyMap<string, ReadonlyMap<string, ConnectionStatus>>;

/** What a change of the remote sessions is compared by: each agent's key and path. */
function remoteSignature(agents: ReadonlyMap<string, ConnectionStatus> | undefined): string {
  if (!agents) return '';
  return [...agents]
    .map(([key, s]) => `${key}:${s.connected ? s.path : 'down'}`)
    .sort()
    .join(',');
}

export class LiveConnections {
  readonly #events: EventEmitter<RelayEvents>;
  readonly #live = new Map<string, ConnectionStatus>();
  readonly #agents = new AgentConnections();
  /** Sessions other replicas of a fleet hold (relay/fleet/mesh/), by cluster then agent key; replaced on each refresh. */
  #remote: RemoteSessions = new Map();

  constructor(events: EventEmitter<RelayEvents>) {
    this.#events = events;
  }

  /**
   * Merges `status` into the cluster's live status (by cluster name); with `publicKey`, into that agent's, and the
   * cluster's becomes its agents' together (agent-connections.ts: connected while any agent is).
   */
  update(cluster: string, status: Partial<ConnectionStatus>, publicKey?: string): void {
    const prev = this.#live.get(cluster) ?? NO_CONNECTION;
    const agentBefore = publicKey === undefined ? undefined : this.#agents.of(cluster).get(publicKey);
    const next =
      publicKey === undefined
        ? { ...prev, ...status }
        : clusterOfAgents(this.#agents.update(cluster, publicKey, status));
    this.#live.set(cluster, next);
    if (next.connected !== prev.connected || next.path !== prev.path) {
      this.#events.emit('connection-changed', { cluster, connected: next.connected, path: next.path });
    }
    if (publicKey !== undefined) {
      const was = agentBefore ?? NO_CONNECTION;
      const now = this.#agents.of(cluster).get(publicKey) ?? NO_CONNECTION;
      if (now.connected !== was.connected || now.path !== was.path)
        this.#events.emit('agent-connection-changed', {
          cluster,
          publicKey,
          connected: now.connected,
          path: now.path,
        });
    }
    this.#events.emit('connection-reported', cluster);
  }

  /** This process's own status of the cluster (its agents' together), whatever other replicas hold. */
  local(cluster: string): ConnectionStatus {
    return this.#live.get(cluster) ?? NO_CONNECTION;
  }

  /**
   * The live status of each agent of the cluster, by key: this process's session of it, else the one another replica
   * of the fleet holds.
   */
  agents(cluster: string): ReadonlyMap<string, ConnectionStatus> {
    const local = this.#agents.of(cluster);
    const remote = this.#remote.get(cluster);
    if (!remote || remote.size === 0) return local;
    const merged = new Map(local);
    for (const [key, s] of remote) if (!merged.get(key)?.connected) merged.set(key, s);
    return merged;
  }

  /** Forgets one agent (unjoined); the cluster's status follows its other agents. */
  forgetAgent(cluster: string, publicKey: string): void {
    const was = this.#agents.of(cluster).get(publicKey);
    this.#agents.forgetAgent(cluster, publicKey);
    if (was?.connected)
      this.#events.emit('agent-connection-changed', { cluster, publicKey, connected: false, path: 'none' });
    if (this.#agents.of(cluster).size > 0) this.update(cluster, {}, [...this.#agents.of(cluster).keys()][0]);
  }

  /** The sessions other replicas hold, by cluster and agent (a fleet's mesh refreshes this about every second). */
  setRemote(remote: RemoteSessions): void {
    const before = this.#remote;
    this.#remote = remote;
    for (const [cluster, agents] of remote) {
      if (remoteSignature(before.get(cluster)) !== remoteSignature(agents))
        this.#events.emit('connection-reported', cluster);
    }
    for (const cluster of before.keys())
      if (!remote.has(cluster)) this.#events.emit('connection-reported', cluster);
  }

  /** This process's session of the cluster, else one another replica of the fleet holds, else none. */
  get(cluster: string): ConnectionStatus {
    const local = this.#live.get(cluster);
    if (local?.connected) return local;
    for (const s of this.#remote.get(cluster)?.values() ?? []) if (s.connected) return s;
    return local ?? NO_CONNECTION;
  }

  /** Another replica of the fleet holds a live session of one of the cluster's agents (as of its last refresh). */
  heldElsewhere(cluster: string): boolean {
    for (const s of this.#remote.get(cluster)?.values() ?? []) if (s.connected) return true;
    return false;
  }

  /** Clusters with a live session right now. */
  get connectedCount(): number {
    let n = 0;
    for (const s of this.#live.values()) if (s.connected) n++;
    return n;
  }

  forget(cluster: string): void {
    for (const [publicKey, s] of this.#agents.of(cluster))
      if (s.connected)
        this.#events.emit('agent-connection-changed', { cluster, publicKey, connected: false, path: 'none' });
    this.#agents.forget(cluster);
    const was = this.#live.get(cluster);
    this.#live.delete(cluster);
    if (was?.connected) this.#events.emit('connection-changed', { cluster, connected: false, path: 'none' });
  }
}
