/**
 * Which hub replica a relay-mode replica sends a request to: a hub request (CONNECT to
 * `<cluster>.clusters.local:<port>`, the path proxy `/api/v1/clusters/NAME/proxy...`, plain or Upgrade) goes to the
 * ready hub replica holding the cluster's agent when the fleet's locations name one; everything else (/derp, the
 * API, registration) to any ready hub replica, round robin.
 */
import type { IncomingMessage } from 'node:http';
import { TunnelError } from '../../../shared/errors.js';
import type { ReplicaRow } from '../../control/store/postgres-mesh.js';
import { parseConnectTarget } from '../../data/proxy/connect-proxy.js';
import { parseProxyPath } from '../../data/proxy/path-proxy.js';
import type { HubPool } from './hub-pool.js';

/** The cluster a hub request is for, or null for any other request. */
export function clusterOf(req: IncomingMessage): string | null {
  const url = req.url ?? '';
  if (req.method === 'CONNECT') return parseConnectTarget(url)?.cluster ?? null;
  return parseProxyPath(url)?.cluster ?? null;
}

/** The hub replica for `req`; MESH_UNREACHABLE (502) when no hub replica is live and ready. */
export function hubFor(pool: HubPool, req: IncomingMessage): ReplicaRow {
  const row = pool.pickFor(clusterOf(req));
  if (row === null) {
    throw new TunnelError(
      'MESH_UNREACHABLE',
      `no hub replica is live and ready (${pool.liveCount} live in the store); this relay-mode replica only forwards`,
    );
  }
  return row;
}
