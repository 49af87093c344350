/**
 * The hub mode's routes behind the mesh header check, then the extra plugins (data plane: /derp, proxies), registered
 * before it listens.
 */
import type { FastifyInstance } from 'fastify';
import { watchAuditOverCap } from '../audit-over-cap.js';
import type { RelayContext } from '../context.js';
import { screenMeshHeader } from '../mesh/mesh-screen.js';
import { auditRoutes } from '../routes/audit.js';
import { clusterRoutes } from '../routes/clusters.js';
import { consoleRoutes } from '../routes/console.js';
import { eventsRoutes } from '../routes/events.js';
import { healthRoutes } from '../routes/health.js';
import { kubeconfigRoutes } from '../routes/kubeconfig.js';
import { networkRoutes } from '../routes/network.js';
import { rateLimitRoutes } from '../routes/rate-limits.js';
import { registerRoutes } from '../routes/register.js';
import { tokenRoutes } from '../routes/tokens.js';
import { valuesRoutes } from '../routes/values.js';
import { whoamiRoutes } from '../routes/whoami.js';
import { installWriteBudget } from '../write-budget-hook.js';

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
