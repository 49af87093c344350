/**
 * One word for where a cluster stands, as the anchors show it (OCM's ManagedCluster, Tailscale's and Cloudflare's
 * connector status), driven by the hub's live view of each agent's session (relay connection, WireGuard session,
 * probes: relay/data/hub/hub-status.ts), not by the lease:
 *   Connected        every agent of the cluster has a live session;
 *   Degraded         some agents have one, some do not;
 *   Disconnected     none has one, and an agent has been seen before (a session, or a lease renewed);
 *   Never connected  no agent has been seen yet.
 * The lease and its Available condition keep their OCM meaning beside it (conditions.ts).
 */
import type { ClusterState } from '../../../shared/api/cluster-state.js';

export interface AgentsSeen {
  /** Agents registered to the cluster. */
  agents: number;
  /** Of those, agents with a live session now. */
  connected: number;
  /** An agent of the cluster has had a session or renewed a lease. */
  everSeen: boolean;
}

export function clusterState(a: AgentsSeen): ClusterState {
  if (a.agents > 0 && a.connected >= a.agents) return 'Connected';
  if (a.connected > 0) return 'Degraded';
  return a.everSeen ? 'Disconnected' : 'Never connected';
}
