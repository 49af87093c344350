/**
 * The console's clusters: pages of GET /api/v1/clusters (CLUSTER_PAGE at a time, the next on loadMore) kept current
 * by the events feed (live.ts), as cluster-pages.ts combines them. Page reads run one at a time, in order; the
 * feed's changes that arrive while one runs wait for it and are applied after its page.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.js';
import {
  type ClusterChange,
  type ClusterPage,
  type ClusterSet,
  NO_CLUSTERS,
  withChange,
  withCluster,
  withPage,
} from './cluster-pages.js';
import { type FeedMode, startClusterFeed } from './live.js';
import type { Cluster } from './types.js';

/** Clusters per page (the relay's default page). */
export const CLUSTER_PAGE = 100;

export interface LiveClusters {
  clusters: ReadonlyMap<string, Cluster>;
  /** The first page has been read. */
  loaded: boolean;
  /** More clusters remain on the relay after the pages read. */
  more: boolean;
  loadingMore: boolean;
  /** Why the last page read failed, until one succeeds. */
  listError: string | null;
  feed: { mode: FeedMode; detail: string | null };
  loadMore(): void;
  upsert(c: Cluster): void;
  remove(name: string): void;
}

function pagePath(token: string | null): string {
  return `/api/v1/clusters?limit=${CLUSTER_PAGE}${token === null ? '' : `&continue=${encodeURIComponent(token)}`}`;
}

export function useClusters(api: Api): LiveClusters {
  const [set, setSet] = useState<ClusterSet>(NO_CLUSTERS);
  const [loadingMore, setLoadingMore] = useState(false);
  const [listError, setListError] = useState<string | null>(null);
  const [feed, setFeed] = useState<{ mode: FeedMode; detail: string | null }>({
    mode: 'connecting',
    detail: null,
  });
  const held = useRef<ClusterSet>(NO_CLUSTERS);
  /** Changes that came while a page is read (null: none is). */
  const waiting = useRef<ClusterChange[] | null>(null);
  const reads = useRef<Promise<void>>(Promise.resolve());
  const firstQueued = useRef(false);

  const commit = useCallback((next: ClusterSet) => {
    held.current = next;
    setSet(next);
  }, []);
  const change = useCallback(
    (c: ClusterChange) => {
      if (waiting.current !== null) waiting.current.push(c);
      else commit(withChange(held.current, c));
    },
    [commit],
  );

  const read = useCallback(
    (first: boolean) => {
      if (first && firstQueued.current) return;
      if (first) firstQueued.current = true;
      else setLoadingMore(true);
      reads.current = reads.current.then(async () => {
        if (first) firstQueued.current = false;
        const token = first ? null : held.current.next;
        if (!first && token === null) return setLoadingMore(false);
        const arrived: ClusterChange[] = [];
        waiting.current = arrived;
        try {
          const page = await api.get<ClusterPage>(pagePath(token));
          commit(arrived.reduce(withChange, withPage(held.current, page, first)));
          setListError(null);
        } catch (err) {
          waiting.current = null;
          for (const c of arrived) change(c);
          setListError((err as Error).message);
        } finally {
          waiting.current = null;
          if (!first) setLoadingMore(false);
        }
      });
    },
    [api, commit, change],
  );

  useEffect(
    () =>
      startClusterFeed(api, {
        resync: () => read(true),
        upsert: (cluster) => change({ kind: 'upsert', cluster }),
        remove: (name) => change({ kind: 'remove', name }),
        mode: (mode, detail) =>
          setFeed((f) =>
            f.mode === mode && f.detail === (detail ?? null) ? f : { mode, detail: detail ?? null },
          ),
      }),
    [api, read, change],
  );

  const loadMore = useCallback(() => read(false), [read]);
  const upsert = useCallback((c: Cluster) => commit(withCluster(held.current, c)), [commit]);
  const remove = useCallback((name: string) => change({ kind: 'remove', name }), [change]);
  return {
    clusters: set.clusters,
    loaded: set.loaded,
    more: set.next !== null,
    loadingMore,
    listError,
    feed,
    loadMore,
    upsert,
    remove,
  };
}
