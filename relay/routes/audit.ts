/** GET /api/v1/audit (admin, viewer): newest first. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireReader } from '../auth.js';
import { principalOf, type RelayContext } from '../context.js';
import { AuditList, AuditQuery, ErrorBody } from '../schemas.js';

export const AUDIT_PAGE_MAX = 1000;

export const auditRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get(
    '/api/v1/audit',
    { schema: { querystring: AuditQuery, response: { 200: AuditList, 401: ErrorBody, 403: ErrorBody } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireReader(p, 'read the audit log');
      const limit = Math.min(AUDIT_PAGE_MAX, Math.max(1, Number(req.query.limit ?? '100')));
      const rows = await ctx.store.listAudit(limit);
      return { items: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })) };
    },
  );
};
