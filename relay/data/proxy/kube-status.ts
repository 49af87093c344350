/**
 * Errors of the path proxy as Kubernetes `Status` objects: kubectl (client-go) prints a Status's reason
 * and message ("Error from server (ServiceUnavailable): agent for cluster edge-1 is not connected ...")
 * where any other body becomes "the server is currently unable to handle the request". The relay's
 * stable error code (docs/ERRORS.md) travels as the first cause: `details.causes[0].reason`.
 */
import type { TunnelError } from '../../../shared/errors.js';

export interface KubeStatus {
  apiVersion: 'v1';
  kind: 'Status';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
  details: { name?: string; kind?: string; causes: Array<{ reason: string; message: string }> };
}

/** metav1.StatusReason for an HTTP status (the ones client-go and kubectl know). */
export function kubeReason(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    413: 'RequestEntityTooLarge',
    429: 'TooManyRequests',
    502: 'ServiceUnavailable',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return byStatus[status] ?? (status >= 500 ? 'InternalError' : 'BadRequest');
}

/** The Status details: the cluster named in the request, if any (no keys at all otherwise), and the code as a cause. */
function statusDetails(err: TunnelError, cluster: string | null): KubeStatus['details'] {
  const causes = [{ reason: err.code, message: `relay error ${err.code} (docs/ERRORS.md)` }];
  return cluster === null ? { causes } : { name: cluster, kind: 'clusters', causes };
}

/** The Status body of `err` answered with HTTP `status`; `cluster` names the cluster in the request, if any. */
export function kubeStatus(err: TunnelError, status: number, cluster: string | null): KubeStatus {
  return {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message: err.message,
    reason: kubeReason(status),
    code: status,
    details: statusDetails(err, cluster),
  };
}
