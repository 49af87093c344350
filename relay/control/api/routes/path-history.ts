/**
 * GET /api/v1/clusters/:name/path-history: the agent's recent path changes (direct / relayed / none, the
 * direct remote, why relayed), newest first, as the replica holding its session recorded them. Whoever may
 * read the cluster may read its history.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { PathHistory } from '../../../../shared/api/path-history.js';
import { principalOf, type RelayContext } from '../../../context/context.js';
import { requireClusterRead, visibleCluster } from '../../model/auth.js';
import { NameParams } from '../../model/schemas.js';

export const pathHistoryRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get(
    '/api/v1/clusters/:name/path-history',
    {
      schema: {
        params: NameParams,
        response: { 200: PathHistory, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (req) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterRead(p, c.group, `read clusters in group ${c.group}`);
      const changes = await ctx.store.pathHistory(c.name);
      return {
        items: changes.map((change) => ({ ...change, at: new Date(change.at).toISOString() })),
      };
    },
  );
};
