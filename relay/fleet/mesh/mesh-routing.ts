/**
 * What the hub's proxies ask the mesh: whose request this is (meshOriginOf: a client's, or a mesh peer's with the
 * fleet key; a bad mesh header is refused whether or not this relay has a mesh), and whether a client's request
 * for a cluster goes one hop to another replica (hopFor: only when the agent has no session here and a live
 * replica holds it). A mesh request is always served here, so a request crosses the mesh at most once.
 *
 * An agent that is on the move (its replica drained or died, it is reconnecting through the balancer) has a
 * session nowhere for a moment: hopFor waits for it, up to `arrivalWaitMs` for the cluster (the proxy plugin gives
 * ARRIVAL_WAIT_MS while its lease is fresh, 0 otherwise), looking every ARRIVAL_POLL_MS, so the request reaches it
 * where it lands instead of failing.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AgentLocation } from '../../control/store/postgres-mesh.js';
import type { ClusterRecord } from '../../control/store/types.js';
import { type MeshOrigin, meshOrigin } from './mesh-auth.js';
import type { MeshNode, MeshStats } from './mesh-node.js';

/** How long a request waits for an agent with a fresh lease that has a session on no replica. */
export const ARRIVAL_WAIT_MS = 5_000;
const ARRIVAL_POLL_MS = 100;

export interface MeshRouting {
  /** Null: this relay has no mesh (every request is served here). */
  node: MeshNode | null;
  stats: MeshStats;
  /** Whether this process holds a live session of the agent with this public key. */
  isLocal(publicKey: string): boolean;
  /** How long a request waits for this cluster's agent to show up here or on another replica (0: not at all). */
  arrivalWaitMs(c: ClusterRecord): number;
}

export function meshOriginOf(r: MeshRouting | undefined, headers: IncomingHttpHeaders): MeshOrigin {
  return meshOrigin(r?.node?.key ?? null, headers, r?.stats.auth);
}

/** The replica to forward a request for `c` to, or null to serve it here. */
export async function hopFor(
  r: MeshRouting | undefined,
  origin: MeshOrigin,
  c: ClusterRecord,
): Promise<AgentLocation | null> {
  const node = r?.node;
  const key = c.publicKey;
  if (!r || !node || origin === 'mesh' || key === null) return null;
  const deadline = Date.now() + r.arrivalWaitMs(c);
  for (;;) {
    if (r.isLocal(key)) return null;
    const l = await node.locate(c.name);
    if (l !== null || Date.now() >= deadline) return l;
    await new Promise((resolve) => setTimeout(resolve, ARRIVAL_POLL_MS));
  }
}
