/** What every page gets: the API for the signed-in key, what its role may do, and the live clusters. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api.js';
import type { FeedMode } from './live.js';
import type { Abilities } from './roles.js';
import type { Cluster, WhoAmI } from './types.js';

export interface ConsoleState {
  api: Api;
  me: WhoAmI;
  can: Abilities;
  clusters: ReadonlyMap<string, Cluster>;
  /** Clusters are known (the feed's first snapshot or poll arrived). */
  loaded: boolean;
  feed: { mode: FeedMode; detail: string | null };
  /** Put a fresh copy (from an API answer) in the map before the feed says so. */
  upsert(c: Cluster): void;
  remove(name: string): void;
}

export const Console = createContext<ConsoleState | null>(null);

export function useConsole(): ConsoleState {
  const s = useContext(Console);
  if (!s) throw new Error('useConsole outside the signed-in console');
  return s;
}
