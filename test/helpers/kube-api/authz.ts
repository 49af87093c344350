/**
 * The test API server's authentication and authorization, as kube-apiserver does them for the agent:
 * a bearer token (401 Status when missing or wrong), impersonation checked against what the agent's
 * ClusterRole allows (403 Status), then RBAC of the effective groups against ClusterRole names bound to
 * them (cluster-admin, edit, view; 403 Status naming user, verb and resource).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { failure, type KubeStatus } from './status.js';

export interface AuthzConfig {
  /** Bearer tokens accepted now (a rotated token replaces the old one). */
  tokens: Set<string>;
  /** The service account the tokens belong to. */
  serviceAccount: string;
  /** Groups the service account may impersonate (the agent's ClusterRole resourceNames); users: any. */
  impersonableGroups: ReadonlySet<string>;
  /** Group -> bound ClusterRole name (cluster-admin, edit or view). */
  bindings: ReadonlyMap<string, string>;
  /** What the service account may do as itself besides impersonating ("list nodes"), from its ClusterRole. */
  serviceAccountRights?: ReadonlySet<string>;
}

export interface Identity {
  user: string;
  groups: string[];
}

export interface Access {
  verb: string;
  resource: string;
  name?: string;
  namespace?: string;
}

const READ = new Set(['get', 'list', 'watch']);

/** What a bound ClusterRole allows (the three built-ins the manifests bind, narrowed to these resources). */
function allows(clusterRole: string, a: Access): boolean {
  if (clusterRole === 'cluster-admin') return true;
  if (clusterRole === 'edit') return true;
  if (clusterRole === 'view') return READ.has(a.verb) && !a.resource.includes('/');
  return false;
}

function all(headers: IncomingHttpHeaders, name: string): string[] {
  const v = headers[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** The caller: the token's service account, or whom it impersonates; a 401/403 Status otherwise. */
export function authenticate(c: AuthzConfig, headers: IncomingHttpHeaders): Identity | KubeStatus {
  const m = /^Bearer (\S+)$/.exec(headers.authorization ?? '');
  if (!m || !c.tokens.has(m[1]!)) return failure(401, 'Unauthorized');
  const users = all(headers, 'impersonate-user');
  const groups = all(headers, 'impersonate-group');
  if (users.length === 0) {
    if (groups.length > 0) return failure(500, 'requested impersonation of groups without a user');
    return { user: c.serviceAccount, groups: ['system:serviceaccounts', 'system:authenticated'] };
  }
  if (users.length > 1) return failure(400, 'only one Impersonate-User header is allowed');
  for (const g of groups) {
    if (!c.impersonableGroups.has(g)) {
      return failure(
        403,
        `groups "${g}" is forbidden: User "${c.serviceAccount}" cannot impersonate resource "groups" in API group "" at the cluster scope`,
      );
    }
  }
  return { user: users[0]!, groups: [...groups, 'system:authenticated'] };
}

/** null when `who` may do `a`; else the 403 Status kube-apiserver answers. */
export function authorize(c: AuthzConfig, who: Identity, a: Access): KubeStatus | null {
  if (who.user === c.serviceAccount && c.serviceAccountRights?.has(`${a.verb} ${a.resource}`)) return null;
  for (const g of who.groups) {
    const role = c.bindings.get(g);
    if (role !== undefined && allows(role, a)) return null;
  }
  const [resource, sub] = a.resource.split('/');
  const what = `${a.name ? `${resource} "${a.name}"` : resource} is forbidden`;
  const res = sub ? `${resource}/${sub}` : resource;
  const where = a.namespace ? ` in the namespace "${a.namespace}"` : ' at the cluster scope';
  return failure(
    403,
    `${what}: User "${who.user}" cannot ${a.verb} resource "${res}" in API group ""${where}`,
  );
}
