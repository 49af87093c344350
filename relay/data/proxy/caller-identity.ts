/**
 * Who the agent acts as on its cluster's API server for a path-proxy caller (docs/OPERATIONS.md, "Identity"):
 * user `tunnel-relay:<access key id>`, group `tunnel-relay:<role>` (`admin`, `viewer`, `group-editor:<group>`;
 * a kubeconfig key the role of the key that minted it). The hub puts this in the stream's OPEN text
 * (shared/net/mux/upstream-identity.ts); the agent adds the Impersonate-* headers. A cluster whose values say
 * `impersonate: false` (platform values, overridden by the cluster's own) gets the agent's own identity.
 * Client-sent Authorization and Impersonate-* headers are dropped here and again on the agent.
 */
import type { CallerIdentity } from '../../../shared/net/mux/upstream-identity.js';
import { type KeyPrincipal, parseRole, type Role, scopedClusterOf } from '../../control/model/auth.js';

export const IDENTITY_PREFIX = 'tunnel-relay:';

/** The relay role a key acts with on a cluster: its own, or for a kubeconfig key its minter's (legacy: viewer). */
export function effectiveRole(key: KeyPrincipal): Role {
  if (scopedClusterOf(key.role) === null) return key.role;
  const minted = key.mintedRole === undefined ? null : parseRole(key.mintedRole);
  return minted !== null && scopedClusterOf(minted) === null && minted !== 'bootstrap' ? minted : 'viewer';
}

/** The user and groups the agent impersonates for `key`; `readOnly`: a read-only caller's write (ro=1). */
export function callerIdentity(key: KeyPrincipal, readOnly: boolean): CallerIdentity {
  return {
    user: `${IDENTITY_PREFIX}${key.id}`,
    groups: [`${IDENTITY_PREFIX}${effectiveRole(key)}`],
    readOnly,
  };
}

/** `raw` (a flat name/value list) without Authorization and any Impersonate-* header, whatever their case. */
export function withoutClientCredentials(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === 'authorization' || name.startsWith('impersonate-')) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}
