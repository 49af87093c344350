/**
 * The hub mode's routes behind the mesh header check, then the extra plugins (data plane: /derp, proxies), registered
 * before it listens.
 */
import type { FastifyInstance } from 'fastify';
import type { RelayContext } from '../context/context.js';
import { watchAuditOverCap } from '../control/api/audit-over-cap.js';
import { auditRoutes } from '../control/api/routes/audit.js';
import { clusterRoutes } from '../control/api/routes/clusters.js';
import { consoleRoutes } from '../control/api/routes/console.js';
import { eventsRoutes } from '../control/api/routes/events.js';
import { healthRoutes } from '../control/api/routes/health.js';
import { kubeconfigRoutes } from '../control/api/routes/kubeconfig.js';
import { networkRoutes } from '../control/api/routes/network.js';
import { rateLimitRoutes } from '../control/api/routes/rate-limits.js';
import { registerRoutes } from '../control/api/routes/register.js';
import { tokenRoutes } from '../control/api/routes/tokens.js';
import { valuesRoutes } from '../control/api/routes/values.js';
import { whoamiRoutes } from '../control/api/routes/whoami.js';
import { installWriteBudget } from '../control/api/write-budget-hook.js';
import { screenMeshHeader } from '../fleet/mesh/mesh-screen.js';

export type RelayPlugin = (app: FastifyInstance, relay: RelayContext) => Promise<void>;

const ROUTES = [
  healthRoutes,
  networkRoutes,
  clusterRoutes,
  eventsRoutes,
  kubeconfigRoutes,
  registerRoutes,
  tokenRoutes,
  valuesRoutes,
  auditRoutes,
  rateLimitRoutes,
  whoamiRoutes,
  consoleRoutes,
];

/** Registers everything and waits until Fastify is ready; a failing plugin closes the app and rethrows. */
export async function registerHubRoutes(
  app: FastifyInstance,
  ctx: RelayContext,
  plugins: readonly RelayPlugin[],
): Promise<void> {
  try {
    // Ahead of every route: a bad mesh header is refused before anything else.
    screenMeshHeader(app, ctx);
    installWriteBudget(app, ctx);
    watchAuditOverCap(app, ctx);
    for (const routes of ROUTES) await app.register(routes, { ctx });
    for (const plugin of plugins) await plugin(app, ctx);
    await app.ready();
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
}
