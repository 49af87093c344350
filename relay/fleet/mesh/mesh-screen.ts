/**
 * The mesh header check on everything a hub replica serves. A request carrying `tunnel-mesh-key` with any value but
 * this fleet's mesh key (or carrying it at all on a relay with no mesh key) is refused with 403
 * MESH_UNAUTHENTICATED before anything else is looked at: on the API routes, the agent values YAML, the console,
 * the probes (a Fastify onRequest hook added ahead of every route) and on `/derp` (the DERP server's refusal, wired
 * in data-plane.ts); the hub proxies (CONNECT, path proxy, their Upgrades) check it themselves (mesh-routing.ts).
 * Only replicas of the fleet send the header, with the right key; clients (CLIs, agents, the console) never do.
 * Each refusal counts in `tunnel_relay_mesh_requests_total{result="refused"}`.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { TunnelError } from '../../../shared/errors.js';
import { meshRefusal } from './mesh-auth.js';
import { type MeshNode, type MeshStats, newMeshStats } from './mesh-node.js';

/** What the screen needs of the relay: its mesh node, if it is a replica of a fleet. */
export interface MeshHolder {
  readonly mesh?: MeshNode | null;
}

/** The counters of a relay without a mesh (a mesh node keeps its own). */
const meshlessStats = new WeakMap<object, MeshStats>();

/** The mesh counters of this relay: its mesh node's, or one set per context without a mesh. */
export function meshStatsOf(ctx: MeshHolder): MeshStats {
  if (ctx.mesh) return ctx.mesh.stats;
  let stats = meshlessStats.get(ctx);
  if (!stats) {
    stats = newMeshStats();
    meshlessStats.set(ctx, stats);
  }
  return stats;
}

/** The refusal of a request with a bad mesh header (counted), or null. */
export function meshHeaderRefusal(ctx: MeshHolder, req: IncomingMessage): TunnelError | null {
  return meshRefusal(ctx.mesh?.key ?? null, req.headers, meshStatsOf(ctx).auth);
}

/** Refuses a bad mesh header on every route of `app` registered after this call. */
export function screenMeshHeader(app: FastifyInstance, ctx: MeshHolder): void {
  app.addHook('onRequest', async (req) => {
    const refused = meshHeaderRefusal(ctx, req.raw);
    if (refused) throw refused;
  });
}
