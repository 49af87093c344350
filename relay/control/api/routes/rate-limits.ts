/**
 * The registration-failure limit, for operators: GET /api/v1/rate-limits (admin, viewer) lists the
 * sources being counted; DELETE /api/v1/rate-limits?source=ADDR or ?all=true (admin) clears them, with
 * an audit entry per call.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { TunnelError } from '../../../../shared/errors.js';
import { auditEntry, logAudit, principalOf, type RelayContext } from '../../../context/context.js';
import { parseSource } from '../../../ops/http/source-address.js';
import type { LimitEntry } from '../../../ops/rate-limit.js';
import { actorOf, requireAdmin, requireReader } from '../../model/auth.js';
import { retryAfterSeconds } from '../registration-limit.js';

/** An `all=true` clear names at most this many sources in its audit entry (`count` has the total). */
const AUDIT_SOURCES_MAX = 100;

const closed = { additionalProperties: false } as const;

const LimitItem = Type.Object(
  {
    source: Type.String(),
    failures: Type.Integer(),
    limited: Type.Boolean(),
    windowEndsAt: Type.String(),
    retryAfterSeconds: Type.Union([Type.Integer(), Type.Null()]),
  },
  closed,
);

const LimitList = Type.Object(
  { max: Type.Integer(), windowSeconds: Type.Integer(), items: Type.Array(LimitItem) },
  closed,
);

const ClearQuery = Type.Object(
  {
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    all: Type.Optional(Type.Literal('true')),
  },
  closed,
);

const Cleared = Type.Object({ cleared: Type.Array(LimitItem) }, closed);

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

export const rateLimitRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  const limiter = ctx.limiter.bySource;
  const view = (e: LimitEntry) => ({
    source: e.key,
    failures: e.failures,
    limited: e.limited,
    windowEndsAt: new Date(ctx.clock.wallNow() + e.remainingMs).toISOString(),
    retryAfterSeconds: e.limited ? retryAfterSeconds(e.remainingMs) : null,
  });

  app.get('/api/v1/rate-limits', { schema: { response: { 200: LimitList, ...errors } } }, async (req) => {
    requireReader(await principalOf(ctx, req), 'read rate limits');
    const { max, windowMs } = limiter.options;
    return { max, windowSeconds: windowMs / 1000, items: (await limiter.list()).map(view) };
  });

  app.delete(
    '/api/v1/rate-limits',
    { schema: { querystring: ClearQuery, response: { 200: Cleared, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireAdmin(p, 'clear rate limits');
      const { source, all } = req.query;
      if ((source === undefined) === (all === undefined)) {
        throw new TunnelError('BAD_INPUT', 'query: give exactly one of source=ADDRESS or all=true');
      }
      const key = source === undefined ? null : parseSource(source, 'query.source');
      const cleared =
        key === null ? await limiter.clearAll() : [await limiter.clear(key)].flatMap((e) => (e ? [e] : []));
      if (key !== null && cleared.length === 0) {
        throw new TunnelError('NOT_FOUND', `source ${key} has no failed registrations being counted`);
      }
      const items = cleared.map(view);
      const audit = auditEntry(ctx, req, actorOf(p), 'rate-limit.clear', key ?? '*', {
        count: items.length,
        sources: items
          .slice(0, AUDIT_SOURCES_MAX)
          .map((i) => ({ source: i.source, failures: i.failures, limited: i.limited })),
      });
      await ctx.store.appendAudit(audit);
      logAudit(ctx, audit);
      return { cleared: items };
    },
  );
};
