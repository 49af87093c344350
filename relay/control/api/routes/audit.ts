/**
 * GET /api/v1/audit (admin, viewer): the audit log newest first, one page at a time (`?limit=&continue=`,
 * relay/control/model/paging.ts), optionally only rows at or after `?since=` (RFC 3339), of one `?actor=`, about one
 * `?cluster=` and, for the session rows (relay/data/proxy/session-audit.ts), of one `?kind=exec|attach|port-forward`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AuditList } from '../../../../shared/api/audit.js';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { TunnelError } from '../../../../shared/errors.js';
import { principalOf, type RelayContext } from '../../../context/context.js';
import { requireReader } from '../../model/auth.js';
import { AUDIT_PAGE, decodeContinue, encodeContinue, pageLimit } from '../../model/paging.js';
import { AuditQuery } from '../../model/schemas.js';

/** RFC 3339 date-time with a zone (`2026-01-02T03:04:05Z`, `...+01:00`), fractions allowed. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function sinceOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new TunnelError(
      'BAD_INPUT',
      `since ${JSON.stringify(text)} is not valid: expected an RFC 3339 time like 2026-01-02T15:04:05Z`,
    );
  }
  return ms;
}

export const auditRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get(
    '/api/v1/audit',
    {
      schema: {
        querystring: AuditQuery,
        response: { 200: AuditList, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireReader(p, 'read the audit log');
      const since = sinceOf(req.query.since);
      const page = await ctx.store.auditPage({
        limit: pageLimit(req.query.limit, AUDIT_PAGE),
        before: decodeContinue('audit', req.query.continue),
        ...(since === undefined ? {} : { since }),
        ...(req.query.actor === undefined ? {} : { actor: req.query.actor }),
        ...(req.query.cluster === undefined ? {} : { target: req.query.cluster }),
        ...(req.query.kind === undefined ? {} : { action: `session.${req.query.kind}` }),
      });
      const items = page.items.map((r) => ({ ...r, at: new Date(r.at).toISOString() }));
      return page.next === null ? { items } : { items, continue: encodeContinue('audit', page.next) };
    },
  );
};
