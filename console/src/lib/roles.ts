/** What the signed-in key's role may do (the table in docs/API.md); the console offers only that. */
import type { WhoAmI } from './types.js';

export interface Abilities {
  role: string;
  /** May create, accept, deny, rotate and delete clusters in `group` (and set their values). */
  writeCluster(group: string): boolean;
  /** May create clusters at all; `fixedGroup` is the only group it may use (group-editor). */
  createCluster: boolean;
  fixedGroup: string | null;
  manageKeys: boolean;
  readAudit: boolean;
  readPlatformValues: boolean;
}

export function abilitiesOf(me: WhoAmI): Abilities {
  const admin = me.role === 'admin';
  const reader = admin || me.role === 'viewer';
  const group = me.role.startsWith('group-editor:') ? me.group : null;
  return {
    role: me.role,
    writeCluster: (g) => admin || (group !== null && g === group),
    createCluster: admin || group !== null,
    fixedGroup: group,
    manageKeys: admin,
    readAudit: reader,
    readPlatformValues: reader,
  };
}

/** Roles that cannot use the console at all (they may only register agents or reach one proxy). */
export function consoleRefusal(me: WhoAmI): string | null {
  if (me.role === 'bootstrap')
    return 'this is a bootstrap key: it can only register agents, not use the console';
  if (me.role.startsWith('cluster-proxy')) return 'this key only reaches one cluster through its proxy';
  return null;
}
