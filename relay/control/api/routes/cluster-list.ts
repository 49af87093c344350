/**
 * GET /api/v1/clusters: one page of the clusters the caller may see, in name order (byte order), with
 * `?limit=&continue=` (relay/control/model/paging.ts) and optional `?group=` and `?status=` filters applied in SQL. Admin and
 * viewer see every group; a group-editor its own group only (another group in `?group=` is 403 FORBIDDEN).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClusterList } from '../../../../shared/api/cluster-list.js';
import { clusterView, principalOf, type RelayContext } from '../../../context/context.js';
import { requireClusterRead } from '../../model/auth.js';
import { checkName } from '../../model/names.js';
import { CLUSTER_PAGE, decodeContinue, encodeContinue, pageLimit } from '../../model/paging.js';
import { ClusterListQuery, ERROR_REPLIES } from '../../model/schemas.js';

export const clusterListRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get(
    '/api/v1/clusters',
    { schema: { querystring: ClusterListQuery, response: { 200: ClusterList, ...ERROR_REPLIES } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const asked = req.query.group === undefined ? null : checkName(req.query.group, 'group');
      requireClusterRead(p, asked, asked === null ? 'list clusters' : `list clusters in group ${asked}`);
      const own = p.kind === 'key' && p.group !== null ? p.group : null;
      const group = own ?? asked;
      const limit = pageLimit(req.query.limit, CLUSTER_PAGE);
      const page = await ctx.store.clusterPage({
        limit,
        after: decodeContinue('clusters', req.query.continue),
        ...(group === null ? {} : { group }),
        ...(req.query.status === undefined ? {} : { status: req.query.status }),
      });
      const paths = await ctx.store.agentPaths(page.items.map((c) => c.name));
      const pathOf = new Map(paths.map((path) => [path.cluster, path]));
      const items = page.items.map((c) => clusterView(ctx, c, pathOf.get(c.name)));
      return page.next === null ? { items } : { items, continue: encodeContinue('clusters', page.next) };
    },
  );
};
