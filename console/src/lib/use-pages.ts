/**
 * A paged list read a page at a time (`?limit=&continue=`, docs/API.md "Lists"): the first page on mount and
 * whenever `path` changes or reload() is called, the next on loadMore(). An answer that a reload made stale is
 * dropped.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.js';

export interface Pages<T> {
  items: T[];
  /** The first page has been read. */
  loaded: boolean;
  more: boolean;
  loading: boolean;
  error: string | null;
  loadMore(): void;
  reload(): void;
}

interface State<T> {
  items: T[];
  next: string | null;
  loaded: boolean;
  loading: boolean;
  error: string | null;
}

const START = { items: [], next: null, loaded: false, loading: true, error: null };

/** `path` without limit and continue (it may carry other query parameters). */
export function usePages<T>(api: Api, path: string, pageSize: number): Pages<T> {
  const [state, setState] = useState<State<T>>(START);
  const round = useRef(0);
  const load = useCallback(
    async (token: string | null) => {
      const mine = token === null ? ++round.current : round.current;
      setState((s) => (token === null ? START : { ...s, loading: true }));
      const sep = path.includes('?') ? '&' : '?';
      const cont = token === null ? '' : `&continue=${encodeURIComponent(token)}`;
      try {
        const page = await api.get<{ items: T[]; continue?: string }>(
          `${path}${sep}limit=${pageSize}${cont}`,
        );
        if (mine !== round.current) return;
        setState((s) => ({
          items: token === null ? page.items : [...s.items, ...page.items],
          next: page.continue ?? null,
          loaded: true,
          loading: false,
          error: null,
        }));
      } catch (err) {
        if (mine === round.current)
          setState((s) => ({ ...s, loading: false, error: (err as Error).message }));
      }
    },
    [api, path, pageSize],
  );
  useEffect(() => {
    void load(null);
  }, [load]);
  return {
    items: state.items,
    loaded: state.loaded,
    more: state.next !== null,
    loading: state.loading,
    error: state.error,
    loadMore: () => {
      if (state.next !== null && !state.loading) void load(state.next);
    },
    reload: () => void load(null),
  };
}
