/**
 * The live status of each agent of a cluster (a cluster of agent replicas has several: store/agent-replicas.ts),
 * kept beside the cluster's own (live-connections.ts). Bounded: at most MAX_AGENTS_PER_CLUSTER agents per cluster
 * (a disconnected one makes room first), and the clusters are those the hub reported.
 */
import { MAX_AGENT_REPLICAS } from '../store/agent-replicas.js';
import { type ConnectionStatus, NO_CONNECTION } from './connection-status.js';

/** Agents tracked per cluster: its replicas, and as many again for keys replaced by a re-join. */
export const MAX_AGENTS_PER_CLUSTER = MAX_AGENT_REPLICAS * 2;

export class AgentConnections {
  readonly #byCluster = new Map<string, Map<string, ConnectionStatus>>();

  /** Merges `status` into the agent's; returns the cluster's agents now. */
  update(
    cluster: string,
    publicKey: string,
    status: Partial<ConnectionStatus>,
  ): ReadonlyMap<string, ConnectionStatus> {
    let agents = this.#byCluster.get(cluster);
    if (!agents) {
      agents = new Map();
      this.#byCluster.set(cluster, agents);
    }
    const prev = agents.get(publicKey) ?? NO_CONNECTION;
    agents.delete(publicKey);
    agents.set(publicKey, { ...prev, ...status });
    if (agents.size > MAX_AGENTS_PER_CLUSTER) this.#evictOne(agents);
    return agents;
  }

  /** The cluster's agents by key (empty when none reported). */
  of(cluster: string): ReadonlyMap<string, ConnectionStatus> {
    return this.#byCluster.get(cluster) ?? new Map();
  }

  forget(cluster: string): void {
    this.#byCluster.delete(cluster);
  }

  forgetAgent(cluster: string, publicKey: string): void {
    this.#byCluster.get(cluster)?.delete(publicKey);
  }

  #evictOne(agents: Map<string, ConnectionStatus>): void {
    for (const [key, s] of agents) {
      if (!s.connected) {
        agents.delete(key);
        return;
      }
    }
    const oldest = agents.keys().next().value;
    if (oldest !== undefined) agents.delete(oldest);
  }
}

/**
 * The cluster's status from its agents': connected while any is (the first connected agent's path, handshake and
 * RTT), bytes summed; none connected: the last reported agent's.
 */
export function clusterOfAgents(agents: ReadonlyMap<string, ConnectionStatus>): ConnectionStatus {
  let first: ConnectionStatus | null = null;
  let last: ConnectionStatus = NO_CONNECTION;
  let bytesIn = 0;
  let bytesOut = 0;
  for (const s of agents.values()) {
    if (s.connected && first === null) first = s;
    last = s;
    bytesIn += s.bytesIn;
    bytesOut += s.bytesOut;
  }
  return { ...(first ?? last), bytesIn, bytesOut };
}
