/** The API objects the console reads (docs/API.md). */
export type ClusterStatus = 'Pending' | 'Accepted' | 'Denied';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface Cluster {
  name: string;
  group: string;
  displayName: string;
  status: ClusterStatus;
  conditions: Condition[];
  connected: boolean;
  path: string;
  agentVersion: string | null;
  agentOutdated?: boolean;
  publicKey: string | null;
  address: string | null;
  claims: Record<string, string>;
  leaseRenewTime: string | null;
  lastHandshake: string | null;
  rttMs: number | null;
  /** While connected, from relays that report it: the direct remote, each path's RTT, last switch, why not direct. */
  pathDetail?: PathDetail | null;
  bytesIn?: number;
  bytesOut?: number;
  createdAt: string;
  bootstrapPsk?: { state: string; expiresAt: string; usedAt: string | null } | null;
}

export interface PathDetail {
  remote: string | null;
  rttDirectMs: number | null;
  rttRelayedMs: number | null;
  lastSwitch: string | null;
  reason: string | null;
  /** Who reported `reason`: the agent (its lease) or the hub; absent from older relays. */
  reasonFrom?: 'agent' | 'hub' | null;
}

export interface Bootstrap {
  psk: string;
  expiresAt: string;
  joinCommand: string;
  installUrl: string;
  installCommand: string;
}

export interface WhoAmI {
  keyId: string;
  role: string;
  group: string | null;
  expiresAt: string | null;
}

export interface AccessKey {
  id: string;
  role: string;
  description: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

export interface AuditItem {
  id: number | string;
  at: string;
  actor: string;
  action: string;
  target: string;
  source: string;
  detail: unknown;
}

/** One entry of GET /api/v1/clusters/:name/path-history (newest first). */
export interface PathChange {
  at: string;
  path: string;
  remote: string | null;
  reason: string | null;
  /** Who reported `reason` (absent from an older relay). */
  reasonFrom?: 'agent' | 'hub' | null;
}
