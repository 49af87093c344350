/**
 * The Clusters table's sortable columns (name, state, path, Kubernetes version, nodes, last seen) and their order:
 * ascending by the column, then by name; clusters without a value (no version, no node count, never seen) go last
 * in either direction.
 */
import { latest } from './format.js';
import type { Cluster } from './types.js';

export const SORT_KEYS = ['name', 'state', 'path', 'version', 'nodes', 'seen'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export interface Sort {
  key: SortKey;
  descending: boolean;
}

/** The one word a row's badge shows: Pending and Denied before the live state (rowState). */
export function rowState(c: Cluster): string {
  return c.status === 'Accepted' ? c.state : c.status;
}

const STATE_ORDER = ['Connected', 'Degraded', 'Disconnected', 'Never connected', 'Pending', 'Denied'];
const PATH_ORDER = ['direct', 'relayed', 'none'];

/** `v1.30.2+k3s1` -> [1, 30, 2]; null for no version. */
function versionParts(v: string | null): number[] | null {
  const m = v === null ? null : /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

function compareParts(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/** The column's value: a number list to compare, or null (no value: last). */
function keyOf(c: Cluster, key: SortKey): number[] | string | null {
  switch (key) {
    case 'name':
      return (c.displayName || c.name).toLowerCase();
    case 'state':
      return [STATE_ORDER.indexOf(rowState(c))];
    case 'path':
      return [PATH_ORDER.indexOf(c.connected ? c.path : 'none')];
    case 'version':
      return versionParts(c.kubernetesVersion);
    case 'nodes':
      return c.nodeCount === null ? null : [c.nodeCount];
    case 'seen': {
      const seen = latest(c.lastHandshake, c.leaseRenewTime);
      return seen === null ? null : [Date.parse(seen)];
    }
  }
}

function compareValues(a: number[] | string, b: number[] | string): number {
  if (typeof a === 'string' || typeof b === 'string') return String(a).localeCompare(String(b));
  return compareParts(a, b);
}

/** The rows in the table's order. */
export function sortClusters(rows: readonly Cluster[], sort: Sort): Cluster[] {
  const sign = sort.descending ? -1 : 1;
  return [...rows].sort((x, y) => {
    const a = keyOf(x, sort.key);
    const b = keyOf(y, sort.key);
    if (a === null || b === null) {
      if (a !== b) return a === null ? 1 : -1;
    } else {
      const by = compareValues(a, b);
      if (by !== 0) return sign * by;
    }
    return x.name.localeCompare(y.name);
  });
}
