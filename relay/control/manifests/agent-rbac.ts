/**
 * The agent's Kubernetes identity (docs/OPERATIONS.md, "Identity and RBAC"): a projected, expiring
 * service-account token mounted where the kubelet puts it (the agent re-reads it for every request), a
 * ClusterRole that lets the agent impersonate users and exactly the relay's groups that can reach this
 * cluster (`tunnel-relay:admin`, `tunnel-relay:viewer`, `tunnel-relay:group-editor:<its group>`), and
 * ClusterRoleBindings that give those groups their rights on the cluster (default: admin -> cluster-admin,
 * viewer -> view, group editor -> edit; each can be changed or left out).
 */
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { labels } from './common.js';

export const IMPERSONATOR_ROLE = 'tunnel-client-impersonator';
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Lifetime of the projected token; the kubelet replaces it at 80% of this. */
export const TOKEN_EXPIRATION_SECONDS = 3600;

/** The cluster role each relay group is bound to; null: no binding (the group has no rights there). */
export interface RelayGroupBindings {
  admin: string | null;
  viewer: string | null;
  groupEditor: string | null;
}

export const DEFAULT_GROUP_BINDINGS: RelayGroupBindings = {
  admin: 'cluster-admin',
  viewer: 'view',
  groupEditor: 'edit',
};

export interface AgentRbacOptions {
  app: string;
  namespace: string;
  /** The relay group the cluster belongs to (its group editors reach it). */
  group: string;
  bindings: RelayGroupBindings;
}

/** The Kubernetes groups the agent impersonates callers in (caller-identity.ts on the relay). */
export function relayGroups(group: string): { admin: string; viewer: string; groupEditor: string } {
  return {
    admin: 'tunnel-relay:admin',
    viewer: 'tunnel-relay:viewer',
    groupEditor: `tunnel-relay:group-editor:${group}`,
  };
}

/** The pod's service-account volume: a projected token that expires, the cluster CA and the namespace. */
export function serviceAccountVolume(): { volume: IVolume; mount: IVolumeMount } {
  return {
    volume: {
      name: 'kube-api-access',
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: TOKEN_EXPIRATION_SECONDS } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    },
    mount: { name: 'kube-api-access', mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
  };
}

/** ClusterRole and binding for the agent's impersonation rights (and node listing), and the relay groups' bindings. */
export function agentRbac(o: AgentRbacOptions): Array<ClusterRole | ClusterRoleBinding> {
  const groups = relayGroups(o.group);
  const meta = (name: string) => ({ name, labels: labels(o.app) });
  const role = new ClusterRole({
    metadata: meta(IMPERSONATOR_ROLE),
    rules: [
      // Users have per-key names (tunnel-relay:<key id>): RBAC cannot name them ahead, see SECURITY.md.
      { apiGroups: [''], resources: ['users'], verbs: ['impersonate'] },
      {
        apiGroups: [''],
        resources: ['groups'],
        verbs: ['impersonate'],
        resourceNames: Object.values(groups),
      },
      // The node count the agent reports as a claim (tunnel-client/dialer/cluster-facts.ts).
      { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
    ],
  });
  const own = new ClusterRoleBinding({
    metadata: meta(IMPERSONATOR_ROLE),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: IMPERSONATOR_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: o.app, namespace: o.namespace }],
  });
  const bound = (Object.keys(groups) as Array<keyof RelayGroupBindings>).flatMap((k) => {
    const clusterRole = o.bindings[k];
    if (clusterRole === null) return [];
    return [
      new ClusterRoleBinding({
        metadata: meta(groups[k]),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: groups[k] }],
      }),
    ];
  });
  return [role, own, ...bound];
}
