import { describe, expect, it } from 'vitest';
import type { ClusterRecord } from '../store/types.js';
import { availableCondition, GRACE_PERIODS, graceMs, joinedCondition } from './conditions.js';

const base: ClusterRecord = {
  name: 'c',
  group: 'default',
  displayName: 'c',
  status: 'Pending',
  createdAt: 1_000,
  statusChangedAt: 1_000,
  publicKey: null,
  address: null,
  presharedKey: null,
  agentVersion: null,
  claims: {},
  registeredAt: null,
  leaseRenewAt: null,
  availableSince: null,
  agentReason: null,
  agentReplicas: 1,
  replicaAgents: 0,
};
const iso = (ms: number) => new Date(ms).toISOString();

describe('conditions', () => {
  it('Joined follows registration and acceptance', () => {
    expect(joinedCondition(base)).toMatchObject({ status: 'False', reason: 'AgentNotRegistered' });
    const pending = { ...base, publicKey: 'k', registeredAt: 2_000 };
    expect(joinedCondition(pending)).toMatchObject({
      status: 'False',
      reason: 'AwaitingAcceptance',
      lastTransitionTime: iso(2_000),
    });
    const accepted = { ...pending, status: 'Accepted' as const, statusChangedAt: 3_000 };
    expect(joinedCondition(accepted)).toMatchObject({
      status: 'True',
      reason: 'AgentRegistered',
      lastTransitionTime: iso(3_000),
    });
    expect(joinedCondition({ ...accepted, status: 'Denied', statusChangedAt: 4_000 })).toMatchObject({
      status: 'False',
      reason: 'HubDenied',
      lastTransitionTime: iso(4_000),
    });
  });

  it('Available is True while fresh and Unknown exactly at renew + grace', () => {
    const lease = 60;
    const g = graceMs(lease);
    expect(g).toBe(GRACE_PERIODS * 60_000);
    const c = {
      ...base,
      status: 'Accepted' as const,
      publicKey: 'k',
      registeredAt: 2_000,
      leaseRenewAt: 10_000,
      availableSince: 5_000,
    };
    expect(availableCondition({ ...c, leaseRenewAt: null }, 10_000, lease)).toMatchObject({
      status: 'Unknown',
      reason: 'LeaseNotRenewed',
    });
    expect(availableCondition(c, 10_000 + g - 1, lease)).toMatchObject({
      status: 'True',
      reason: 'LeaseFresh',
      lastTransitionTime: iso(5_000),
    });
    expect(availableCondition(c, 10_000 + g, lease)).toMatchObject({
      status: 'Unknown',
      reason: 'LeaseUpdateStopped',
      lastTransitionTime: iso(10_000 + g),
    });
    expect(availableCondition({ ...c, status: 'Pending' }, 10_000, lease)).toMatchObject({
      status: 'Unknown',
      reason: 'NotJoined',
    });
  });
});
