import { describe, expect, it } from 'vitest';
import { matchesClaims, parseClaimFilter } from './claim-filter.js';
import { sortClusters } from './cluster-sort.js';
import type { Cluster } from './types.js';

const cluster = (name: string, o: Partial<Cluster> = {}): Cluster => ({
  name,
  group: 'default',
  displayName: name,
  status: 'Accepted',
  conditions: [],
  state: 'Never connected',
  connected: false,
  path: 'none',
  pathDetail: null,
  agentVersion: null,
  agentOutdated: false,
  publicKey: null,
  address: null,
  claims: {},
  kubernetesVersion: null,
  nodeCount: null,
  agentReplicas: 1,
  agentsRegistered: 0,
  agentsConnected: 0,
  leaseRenewTime: null,
  lastHandshake: null,
  rttMs: null,
  bytesIn: 0,
  bytesOut: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
  ...o,
});

const names = (rows: Cluster[]) => rows.map((c) => c.name);

describe('cluster sort', () => {
  const rows = [
    cluster('a', { kubernetesVersion: 'v1.9.0', nodeCount: 12 }),
    cluster('b', {
      kubernetesVersion: 'v1.30.2+k3s1',
      nodeCount: 3,
      state: 'Connected',
      connected: true,
      path: 'relayed',
    }),
    cluster('c', { status: 'Pending' }),
    cluster('d', {
      state: 'Connected',
      connected: true,
      path: 'direct',
      lastHandshake: '2026-01-02T00:00:00Z',
    }),
  ];

  it('sorts versions by number, not text, with clusters lacking one last both ways', () => {
    expect(names(sortClusters(rows, { key: 'version', descending: false }))).toEqual(['a', 'b', 'c', 'd']);
    expect(names(sortClusters(rows, { key: 'version', descending: true }))).toEqual(['b', 'a', 'c', 'd']);
  });

  it('sorts nodes, state (Pending after the live states) and path (direct, relayed, none)', () => {
    expect(names(sortClusters(rows, { key: 'nodes', descending: true }))).toEqual(['a', 'b', 'c', 'd']);
    expect(names(sortClusters(rows, { key: 'state', descending: false }))).toEqual(['b', 'd', 'a', 'c']);
    expect(names(sortClusters(rows, { key: 'path', descending: false }))).toEqual(['d', 'b', 'a', 'c']);
    expect(names(sortClusters(rows, { key: 'seen', descending: false }))[0]).toBe('d');
  });
});

describe('claim filter', () => {
  it('takes key=value and key terms, all of which must hold', () => {
    const terms = parseClaimFilter(' env=prod, kubernetes.nodes ');
    expect(terms).toEqual([
      { key: 'env', value: 'prod' },
      { key: 'kubernetes.nodes', value: null },
    ]);
    expect(matchesClaims({ env: 'prod', 'kubernetes.nodes': '3' }, terms)).toBe(true);
    expect(matchesClaims({ env: 'prod' }, terms)).toBe(false);
    expect(matchesClaims({ env: 'production', 'kubernetes.nodes': '3' }, terms)).toBe(false);
    expect(matchesClaims({}, [])).toBe(true);
    expect(matchesClaims({}, parseClaimFilter('constructor'))).toBe(false);
  });
});
