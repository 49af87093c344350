/**
 * What every page gets: the API for the signed-in key, what its role may do, and the live clusters (the pages read
 * so far, use-clusters.ts).
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api.js';
import type { Abilities } from './roles.js';
import type { WhoAmI } from './types.js';
import type { LiveClusters } from './use-clusters.js';

export interface ConsoleState extends LiveClusters {
  api: Api;
  me: WhoAmI;
  can: Abilities;
}

export const Console = createContext<ConsoleState | null>(null);

export function useConsole(): ConsoleState {
  const s = useContext(Console);
  if (!s) throw new Error('useConsole outside the signed-in console');
  return s;
}
