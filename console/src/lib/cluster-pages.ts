/**
 * The clusters the console holds: the pages of GET /api/v1/clusters loaded so far (name order, byte by byte as the
 * relay pages them, `continue` while more remain), kept current by the events feed's changes
 * (GET /api/v1/events?snapshot=false). A change is taken for a cluster held already or within the loaded range (its
 * name sorts at or before the last one loaded, or every page is loaded); a change beyond it is left to the page
 * that will hold it. A deletion always applies. Changes that arrive while a page is read are applied after it, in
 * the order they came (live.ts opens the feed before the first page is read), so a page never hides a later change.
 */
import type { Cluster } from './types.js';

export interface ClusterPage {
  items: Cluster[];
  continue?: string;
}

export type ClusterChange = { kind: 'upsert'; cluster: Cluster } | { kind: 'remove'; name: string };

export interface ClusterSet {
  clusters: ReadonlyMap<string, Cluster>;
  /** The `continue` of the last page loaded; null once every page is loaded (or before the first). */
  next: string | null;
  /** The last name of the loaded pages; null before the first page or when every page is loaded. */
  rangeEnd: string | null;
  /** The first page has been loaded. */
  loaded: boolean;
}

export const NO_CLUSTERS: ClusterSet = { clusters: new Map(), next: null, rangeEnd: null, loaded: false };

/** The set with `page` added (`first`: it is the first page, and replaces what was held). */
export function withPage(set: ClusterSet, page: ClusterPage, first: boolean): ClusterSet {
  const clusters = new Map(first ? [] : set.clusters);
  for (const c of page.items) clusters.set(c.name, c);
  const more = page.continue !== undefined;
  const last = page.items.at(-1)?.name ?? (first ? null : set.rangeEnd);
  return { clusters, next: more ? page.continue! : null, rangeEnd: more ? last : null, loaded: true };
}

/** Whether a change of cluster `name` belongs in the set. */
function inRange(set: ClusterSet, name: string): boolean {
  if (set.clusters.has(name)) return true;
  if (!set.loaded) return false;
  return set.rangeEnd === null || name <= set.rangeEnd;
}

/** The set holding `cluster` wherever its name sorts (an API answer the user asked for: created, accepted...). */
export function withCluster(set: ClusterSet, cluster: Cluster): ClusterSet {
  return { ...set, clusters: new Map(set.clusters).set(cluster.name, cluster) };
}

export function withChange(set: ClusterSet, change: ClusterChange): ClusterSet {
  if (change.kind === 'remove') {
    if (!set.clusters.has(change.name)) return set;
    const clusters = new Map(set.clusters);
    clusters.delete(change.name);
    return { ...set, clusters };
  }
  if (!inRange(set, change.cluster.name)) return set;
  return { ...set, clusters: new Map(set.clusters).set(change.cluster.name, change.cluster) };
}
