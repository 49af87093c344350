import { describe, expect, it } from 'vitest';
import { NO_CLUSTERS, withChange, withCluster, withPage } from './cluster-pages.js';
import type { Cluster } from './types.js';

const cluster = (name: string, status: Cluster['status'] = 'Pending'): Cluster => ({
  name,
  group: 'default',
  displayName: name,
  status,
  conditions: [],
  state: 'Never connected',
  connected: false,
  agentReplicas: 1,
  agentsRegistered: 0,
  agentsConnected: 0,
  path: 'none',
  pathDetail: null,
  agentVersion: null,
  agentOutdated: false,
  publicKey: null,
  address: null,
  claims: {},
  kubernetesVersion: null,
  nodeCount: null,
  leaseRenewTime: null,
  lastHandshake: null,
  rttMs: null,
  bytesIn: 0,
  bytesOut: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
});
const names = (set: { clusters: ReadonlyMap<string, Cluster> }) => [...set.clusters.keys()].sort();

describe('the clusters the console holds', () => {
  it('takes changes within the pages read, leaves later names to their page', () => {
    let set = withPage(NO_CLUSTERS, { items: [cluster('a'), cluster('c')], continue: 'T1' }, true);
    expect(set).toMatchObject({ next: 'T1', rangeEnd: 'c', loaded: true });
    set = withChange(set, { kind: 'upsert', cluster: cluster('b') });
    set = withChange(set, { kind: 'upsert', cluster: cluster('d') });
    set = withChange(set, { kind: 'upsert', cluster: cluster('a', 'Accepted') });
    expect(names(set)).toEqual(['a', 'b', 'c']);
    expect(set.clusters.get('a')?.status).toBe('Accepted');
    // The next page moves the range; the last page ends it (every name is in range then).
    set = withPage(set, { items: [cluster('d'), cluster('e')], continue: 'T2' }, false);
    expect(set).toMatchObject({ next: 'T2', rangeEnd: 'e' });
    set = withPage(set, { items: [cluster('f')] }, false);
    expect(set).toMatchObject({ next: null, rangeEnd: null });
    set = withChange(set, { kind: 'upsert', cluster: cluster('zz') });
    expect(names(set)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'zz']);
  });

  it('applies deletions always, keeps clusters asked for outside the range current, resets on a first page', () => {
    let set = withPage(NO_CLUSTERS, { items: [cluster('a'), cluster('b')], continue: 'T' }, true);
    set = withCluster(set, cluster('x'));
    set = withChange(set, { kind: 'upsert', cluster: cluster('x', 'Denied') });
    expect(set.clusters.get('x')?.status).toBe('Denied');
    set = withChange(set, { kind: 'remove', name: 'a' });
    set = withChange(set, { kind: 'remove', name: 'nope' });
    expect(names(set)).toEqual(['b', 'x']);
    set = withPage(set, { items: [cluster('c')] }, true);
    expect(names(set)).toEqual(['c']);
    // Before the first page nothing is in range.
    expect(names(withChange(NO_CLUSTERS, { kind: 'upsert', cluster: cluster('a') }))).toEqual([]);
  });
});
