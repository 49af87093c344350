/**
 * Cluster conditions, computed from the stored record and the injected clock (never stored, so a
 * stale lease turns Unknown without any timer running):
 *
 * - Joined: True once an agent is registered and the cluster Accepted; False while Pending or
 *   Denied, or before any agent registered.
 * - Available: True while the lease is fresh (now < leaseRenewAt + grace); Unknown once it is not
 *   (reason LeaseUpdateStopped, lastTransitionTime = leaseRenewAt + grace, the instant it went
 *   stale); Unknown before the first renewal. grace = GRACE_PERIODS x leaseDuration.
 */
import type { Condition } from '../../../shared/api/condition.js';
import type { ClusterRecord } from '../store/types.js';

/** Missed lease periods before Available turns Unknown (OCM uses 5; see docs/OPERATIONS.md). */
export const GRACE_PERIODS = 3;

export function graceMs(leaseDurationSeconds: number): number {
  return GRACE_PERIODS * leaseDurationSeconds * 1000;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function joinedCondition(c: ClusterRecord): Condition {
  const registered = c.publicKey !== null && c.registeredAt !== null;
  const at = Math.max(c.statusChangedAt, c.registeredAt ?? 0);
  if (c.status === 'Denied') {
    return {
      type: 'Joined',
      status: 'False',
      reason: 'HubDenied',
      message: 'an administrator denied this cluster',
      lastTransitionTime: iso(c.statusChangedAt),
    };
  }
  if (!registered) {
    return {
      type: 'Joined',
      status: 'False',
      reason: 'AgentNotRegistered',
      message: 'no agent has registered yet',
      lastTransitionTime: iso(c.statusChangedAt),
    };
  }
  if (c.status === 'Pending') {
    return {
      type: 'Joined',
      status: 'False',
      reason: 'AwaitingAcceptance',
      message: 'the agent registered with a bootstrap token; an administrator must accept it',
      lastTransitionTime: iso(at),
    };
  }
  return {
    type: 'Joined',
    status: 'True',
    reason: 'AgentRegistered',
    message: 'the agent is registered and accepted',
    lastTransitionTime: iso(at),
  };
}

export function availableCondition(
  c: ClusterRecord,
  nowWall: number,
  leaseDurationSeconds: number,
): Condition {
  const grace = graceMs(leaseDurationSeconds);
  if (c.status !== 'Accepted' || c.publicKey === null) {
    return {
      type: 'Available',
      status: 'Unknown',
      reason: 'NotJoined',
      message: 'the cluster has no accepted agent',
      lastTransitionTime: iso(Math.max(c.statusChangedAt, c.registeredAt ?? 0)),
    };
  }
  if (c.leaseRenewAt === null) {
    return {
      type: 'Available',
      status: 'Unknown',
      reason: 'LeaseNotRenewed',
      message: 'the agent has not renewed its lease yet',
      lastTransitionTime: iso(Math.max(c.statusChangedAt, c.registeredAt ?? 0)),
    };
  }
  const staleAt = c.leaseRenewAt + grace;
  if (nowWall < staleAt) {
    return {
      type: 'Available',
      status: 'True',
      reason: 'LeaseFresh',
      message: `lease renewed ${Math.max(0, Math.round((nowWall - c.leaseRenewAt) / 1000))}s ago`,
      lastTransitionTime: iso(c.availableSince ?? c.leaseRenewAt),
    };
  }
  return {
    type: 'Available',
    status: 'Unknown',
    reason: 'LeaseUpdateStopped',
    message: `no lease renewal for ${Math.round((nowWall - c.leaseRenewAt) / 1000)}s (grace ${grace / 1000}s)`,
    lastTransitionTime: iso(staleAt),
  };
}
