/** Pieces both manifests share: labels, the namespace, the container security context, default image. */
import { Namespace } from 'kubernetes-models/v1/Namespace';
import type { IPodSecurityContext } from 'kubernetes-models/v1/PodSecurityContext';
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { packageVersion } from '../../../shared/kit/cli/version.js';

/** The uid of the `node` user in the image (deploy/Dockerfile). */
export const IMAGE_UID = 1000;
/** The Node flags the binaries' shebang carries (shared/kit/node-flags.ts); `node` in the image needs them too. */
export const NODE_COMMAND = ['node', '--initial-old-space-size=64', '--heap-growing-percent=200'];

export function labels(app: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': app,
    'app.kubernetes.io/part-of': 'wg-relay-tunnel',
    'app.kubernetes.io/version': packageVersion(),
  };
}

/** The selector subset of labels(): stable across versions, so an upgrade does not orphan pods. */
export function selector(app: string): Record<string, string> {
  return { 'app.kubernetes.io/name': app };
}

export function namespaceObject(name: string): Namespace {
  return new Namespace({ metadata: { name, labels: { 'app.kubernetes.io/part-of': 'wg-relay-tunnel' } } });
}

/**
 * A service account whose token is not mounted automatically: the relay never calls the Kubernetes API, and
 * the agent mounts its own projected, expiring token (agent-rbac.ts).
 */
export function serviceAccountObject(name: string, namespace: string): ServiceAccount {
  return new ServiceAccount({
    metadata: { name, namespace, labels: labels(name) },
    automountServiceAccountToken: false,
  });
}

/** Non-root, read-only root filesystem, no privilege escalation, every capability dropped. */
export const CONTAINER_SECURITY: ISecurityContext = {
  runAsNonRoot: true,
  runAsUser: IMAGE_UID,
  runAsGroup: IMAGE_UID,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export const POD_SECURITY: IPodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: IMAGE_UID,
  runAsGroup: IMAGE_UID,
  fsGroup: IMAGE_UID,
  // The kubelet does not re-add group read/write to the 0600 key and store files at each mount.
  fsGroupChangePolicy: 'OnRootMismatch',
  seccompProfile: { type: 'RuntimeDefault' },
};
