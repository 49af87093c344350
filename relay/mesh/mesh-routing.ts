/**
 * What the hub's proxies ask the mesh: whose request this is (meshOriginOf: a client's, or a mesh peer's with the
 * fleet key; a bad mesh header is refused whether or not this relay has a mesh), and whether a client's request
 * for a cluster goes one hop to another replica (hopFor: only when the agent has no session here and a live
 * replica holds it). A mesh request is always served here, so a request crosses the mesh at most once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AgentLocation } from '../store/postgres-mesh.js';
import type { ClusterRecord } from '../store/types.js';
import { type MeshOrigin, meshOrigin } from './mesh-auth.js';
import type { MeshNode, MeshStats } from './mesh-node.js';

export interface MeshRouting {
  /** Null: this relay has no mesh (every request is served here). */
  node: MeshNode | null;
  stats: MeshStats;
  /** Whether this process holds a live session of the agent with this public key. */
  isLocal(publicKey: string): boolean;
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
  if (!r?.node || origin === 'mesh' || c.publicKey === null || r.isLocal(c.publicKey)) return null;
  return r.node.locate(c.name);
}
