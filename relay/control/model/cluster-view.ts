/**
 * A cluster as the API shows it (GET /api/v1/clusters, docs/API.md): the relay builds it (relay/context/context.ts
 * clusterView) and the console reads it (console/src/lib/types.ts), so this file holds types only.
 */

import type { ReasonedPathDetail } from '../store/path-reason.js';
import type { ClusterState } from './cluster-state.js';
import type { Condition } from './conditions.js';

export interface ClusterView {
  name: string;
  group: string;
  displayName: string;
  status: string;
  conditions: Condition[];
  /** Connected / Degraded / Disconnected / Never connected (cluster-state.ts), from the live sessions. */
  state: ClusterState;
  connected: boolean;
  path: string;
  /** While connected: the path's details (remote, RTT of each path, last switch, why not direct). */
  pathDetail: PathDetailView | null;
  agentVersion: string | null;
  /** The agent reported an older release than this relay's (upgrade it); false when newer, equal or unknown. */
  agentOutdated: boolean;
  publicKey: string | null;
  address: string | null;
  claims: Record<string, string>;
  leaseRenewTime: string | null;
  lastHandshake: string | null;
  rttMs: number | null;
  bytesIn: number;
  bytesOut: number;
  createdAt: string;
}

export type PathDetailView = ReasonedPathDetail;
