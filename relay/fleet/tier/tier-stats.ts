/** Counters of a relay-mode replica's forwarding (exported on its /metrics by tier-metrics.ts). */
import type { ForwardKind } from '../mesh/mesh-forward.js';

export interface TierStats {
  /** Forwards that reached a hub replica, by kind (the agents' /derp pass-throughs are upgrades). */
  forwarded: Record<ForwardKind, number>;
  /** Requests that could not be forwarded (no ready hub replica, dial or pin failure, a client's mesh header). */
  failed: number;
  /** Forwarded connections open now (the mesh-forward.ts counter, /derp pass-throughs included). */
  open: number;
}

export function newTierStats(): TierStats {
  return { forwarded: { connect: 0, upgrade: 0, request: 0 }, failed: 0, open: 0 };
}
