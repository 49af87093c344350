/**
 * Agent values: platform `agentValues` (GET|PUT /api/v1/values), per-cluster annotation values
 * (GET|PUT /api/v1/clusters/:name/values), and the agent-facing YAML at GET /clusters/:name
 * (`?token=` or Bearer; `?source=platform-config|cluster-annotation`, merged when absent). A document that holds
 * platform values is read under the platform values' roles, so no caller reads them here that GET /api/v1/values
 * refuses (the cluster's own agent excepted, for its merged document).
 */
import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox';
import { stringify as toYaml } from 'yaml';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { TunnelError } from '../../../../shared/errors.js';
import { deepMerge } from '../../../../shared/kit/values/deep-merge.js';
import { auditEntry, logAudit, principalOf, type RelayContext } from '../../../context/context.js';
import {
  actorOf,
  clusterNotFound,
  type Principal,
  requireAdmin,
  requireClusterRead,
  requireClusterWrite,
  requireReader,
  visibleCluster,
} from '../../model/auth.js';
import { NameParams, ValuesObject, ValuesQuery } from '../../model/schemas.js';
import { readClusterValues, readPlatformValues } from '../../model/values.js';
import { assertValuesWithinLimits } from '../../model/values-limits.js';
import type { ClusterRecord } from '../../store/types.js';

type ValuesSource = NonNullable<Static<typeof ValuesQuery>['source']>;

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

/** Readers of a cluster's values: admin, viewer, its group's editor, and its own agent. */
function requireValuesRead(p: Principal, c: ClusterRecord): void {
  if (p.kind === 'agent') {
    if (p.status === 'Denied') {
      throw new TunnelError('CLUSTER_DENIED', `cluster "${c.name}" was denied by an administrator`);
    }
    return;
  }
  requireClusterRead(p, c.group, `read values of clusters in group ${c.group}`);
}

/**
 * Readers of the agent values YAML of cluster `c` from `source`: the cluster's own layer as its values route
 * (requireValuesRead); platform values, alone or merged under the cluster's, as the platform values route
 * (admin, viewer), except that the cluster's own agent gets its merged document (what it runs with).
 */
function requireValuesYamlRead(p: Principal, c: ClusterRecord, source: ValuesSource | undefined): void {
  requireValuesRead(p, c);
  if (source === 'cluster-annotation') return;
  if (p.kind === 'agent' && source === undefined) return;
  const what =
    source === 'platform-config'
      ? 'read platform values'
      : `read platform values (merged into those of cluster ${c.name}); ?source=cluster-annotation reads the cluster's own`;
  requireReader(p, what);
}

export const valuesRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get('/api/v1/values', { schema: { response: { 200: ValuesObject, ...errors } } }, async (req) => {
    const p = await principalOf(ctx, req);
    requireReader(p, 'read platform values');
    return readPlatformValues(ctx);
  });

  app.put(
    '/api/v1/values',
    { schema: { body: ValuesObject, response: { 200: ValuesObject, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireAdmin(p, 'set platform values');
      assertValuesWithinLimits(req.body, 'values');
      const audit = auditEntry(ctx, req, actorOf(p), 'values.set', 'platform');
      await ctx.store.setPlatformValues(req.body, audit);
      logAudit(ctx, audit);
      return req.body;
    },
  );

  app.get(
    '/api/v1/clusters/:name/values',
    { schema: { params: NameParams, response: { 200: ValuesObject, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      requireValuesRead(p, c);
      return (await readClusterValues(ctx, c.name)) ?? {};
    },
  );

  app.put(
    '/api/v1/clusters/:name/values',
    { schema: { params: NameParams, body: ValuesObject, response: { 200: ValuesObject, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterWrite(p, c.group, `set values of clusters in group ${c.group}`);
      assertValuesWithinLimits(req.body, 'values');
      const audit = auditEntry(ctx, req, actorOf(p), 'values.set', c.name);
      const ok = await ctx.store.setClusterValues(c.name, req.body, audit);
      if (!ok) throw clusterNotFound(c.name);
      logAudit(ctx, audit);
      ctx.hooks.clusterChanged(c.name);
      return req.body;
    },
  );

  app.get(
    '/clusters/:name',
    { schema: { params: NameParams, querystring: ValuesQuery } },
    async (req, reply) => {
      const p = await principalOf(ctx, req, true);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      const source = req.query.source;
      requireValuesYamlRead(p, c, source);
      const platform = await readPlatformValues(ctx);
      const own = (await readClusterValues(ctx, c.name)) ?? {};
      const doc =
        source === 'platform-config'
          ? platform
          : source === 'cluster-annotation'
            ? own
            : deepMerge(platform, own);
      reply.type('text/yaml; charset=utf-8');
      return toYaml(doc);
    },
  );
};
