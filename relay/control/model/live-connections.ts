/**
 * Each cluster's live connection status, kept in memory: it describes this process's sessions, and is bounded by
 * the number of clusters. In a fleet of replicas the sessions other replicas hold are merged in (setRemote, from
 * the store's agent locations). Changes are told on the relay's event bus (connection-changed,
 * connection-reported).
 */
import type { EventEmitter } from 'node:events';
import { AgentConnections, clusterOfAgents } from './agent-connections.js';
import { type ConnectionStatus, NO_CONNECTION } from './connection-status.js';
import type { RelayEvents } from './relay-events.js';

export class LiveConnections {
  readonly #events: EventEmitter<RelayEvents>;
  readonly #live = new Map<string, ConnectionStatus>();
  readonly #agents = new AgentConnections();
  /** Sessions other replicas of a fleet hold (relay/fleet/mesh/), replaced as a whole on each refresh. */
  #remote: ReadonlyMap<string, ConnectionStatus> = new Map();

  constructor(events: EventEmitter<RelayEvents>) {
    this.#events = events;
  }

  /**
   * Merges `status` into the cluster's live status (by cluster name); with `publicKey`, into that agent's, and the
   * cluster's becomes its agents' together (agent-connections.ts: connected while any agent is).
   */
  update(cluster: string, status: Partial<ConnectionStatus>, publicKey?: string): void {
    const prev = this.#live.get(cluster) ?? NO_CONNECTION;
    const next =
      publicKey === undefined
        ? { ...prev, ...status }
        : clusterOfAgents(this.#agents.update(cluster, publicKey, status));
    this.#live.set(cluster, next);
    if (next.connected !== prev.connected || next.path !== prev.path) {
      this.#events.emit('connection-changed', { cluster, connected: next.connected, path: next.path });
    }
    this.#events.emit('connection-reported', cluster);
  }

  /** This process's own status of the cluster (its agents' together), whatever other replicas hold. */
  local(cluster: string): ConnectionStatus {
    return this.#live.get(cluster) ?? NO_CONNECTION;
  }

  /** The live status of each agent of the cluster this process holds a session of, by key. */
  agents(cluster: string): ReadonlyMap<string, ConnectionStatus> {
    return this.#agents.of(cluster);
  }

  /** Forgets one agent (unjoined); the cluster's status follows its other agents. */
  forgetAgent(cluster: string, publicKey: string): void {
    this.#agents.forgetAgent(cluster, publicKey);
    if (this.#agents.of(cluster).size > 0) this.update(cluster, {}, [...this.#agents.of(cluster).keys()][0]);
  }

  /** The sessions other replicas hold, by cluster (a fleet's mesh refreshes this about every second). */
  setRemote(remote: ReadonlyMap<string, ConnectionStatus>): void {
    const before = this.#remote;
    this.#remote = remote;
    for (const [cluster, s] of remote) {
      const was = before.get(cluster);
      if (was?.connected !== s.connected || was?.path !== s.path)
        this.#events.emit('connection-reported', cluster);
    }
    for (const cluster of before.keys())
      if (!remote.has(cluster)) this.#events.emit('connection-reported', cluster);
  }

  /** This process's session of the cluster, else the one another replica of the fleet holds, else none. */
  get(cluster: string): ConnectionStatus {
    const local = this.#live.get(cluster);
    if (local?.connected) return local;
    return this.#remote.get(cluster) ?? local ?? NO_CONNECTION;
  }

  /** Another replica of the fleet holds a live session of the cluster's agent (as of its last refresh). */
  heldElsewhere(cluster: string): boolean {
    return this.#remote.get(cluster)?.connected === true;
  }

  /** Clusters with a live session right now. */
  get connectedCount(): number {
    let n = 0;
    for (const s of this.#live.values()) if (s.connected) n++;
    return n;
  }

  forget(cluster: string): void {
    this.#agents.forget(cluster);
    const was = this.#live.get(cluster);
    this.#live.delete(cluster);
    if (was?.connected) this.#events.emit('connection-changed', { cluster, connected: false, path: 'none' });
  }
}
