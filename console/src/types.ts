/** The API objects the console reads (docs/API.md). */
import type { ClusterView, PathDetailView } from '../../relay/cluster-view.js';

export type ClusterStatus = 'Pending' | 'Accepted' | 'Denied';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** The API's cluster; the console reads its status and conditions by their values. */
export interface Cluster extends Omit<ClusterView, 'status' | 'conditions'> {
  status: ClusterStatus;
  conditions: Condition[];
  bootstrapPsk?: { state: string; expiresAt: string; usedAt: string | null } | null;
  /** Only on GET /clusters/NAME: whether the agent acts as the calling user there. */
  impersonation?: 'on' | 'off';
}

export type PathDetail = PathDetailView;

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
