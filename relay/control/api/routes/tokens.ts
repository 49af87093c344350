/** Access keys (admin only): create (shown once), list, revoke (never the last active admin key). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CreatedToken, CreateTokenBody, Revoked, TokenList } from '../../../../shared/api/access-keys.js';
import { TunnelError } from '../../../../shared/errors.js';
import { parseDuration } from '../../../../shared/kit/duration.js';
import { auditEntry, logAudit, principalOf, type RelayContext } from '../../../context/context.js';
import { hashSecret, newId, newSecret } from '../../../ops/secrets.js';
import {
  actorOf,
  type Principal,
  parseRole,
  type Role,
  requireAdmin,
  scopedClusterOf,
  visibleCluster,
} from '../../model/auth.js';
import { decodeContinue, encodeContinue, pageLimit, TOKEN_PAGE } from '../../model/paging.js';
import { ERROR_REPLIES, IdParams, PageQuery } from '../../model/schemas.js';
import type { KeyMinting } from '../../store/types.js';

const errors = ERROR_REPLIES;

/**
 * A key scoped to one cluster's proxy is tied to that cluster as it exists now (NOT_FOUND when it does not), as the
 * kubeconfig route ties the keys it mints; null for every other role.
 */
async function scopedKeyMinting(ctx: RelayContext, p: Principal, role: Role): Promise<KeyMinting | null> {
  const cluster = scopedClusterOf(role);
  if (cluster === null) return null;
  const c = await visibleCluster(ctx.store, p, cluster);
  return { by: actorOf(p), clusterCreatedAt: c.createdAt };
}
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const tokenRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.post(
    '/api/v1/tokens',
    { schema: { body: CreateTokenBody, response: { 201: CreatedToken, ...errors } } },
    async (req, reply) => {
      const p = await principalOf(ctx, req);
      requireAdmin(p, 'create access keys');
      const role = parseRole(req.body.role);
      if (!role) {
        throw new TunnelError(
          'BAD_INPUT',
          `role ${JSON.stringify(req.body.role.slice(0, 80))} is not valid: expected admin, viewer, bootstrap or group-editor:<group>`,
        );
      }
      const now = ctx.clock.wallNow();
      const expiresAt = req.body.expiresIn ? now + parseDuration(req.body.expiresIn, 'expiresIn') : null;
      const minted = await scopedKeyMinting(ctx, p, role);
      const id = newId('k_');
      const token = newSecret('accessKey');
      const audit = auditEntry(ctx, req, actorOf(p), 'token.create', id, { role });
      await ctx.store.createAccessKey(
        {
          id,
          role,
          description: req.body.description ?? '',
          createdAt: now,
          expiresAt,
          revokedAt: null,
          minted,
        },
        hashSecret(token),
        audit,
      );
      logAudit(ctx, audit);
      reply.code(201);
      return { id, role, token, expiresAt: isoOrNull(expiresAt) };
    },
  );

  // One page in creation order, `?limit=&continue=` (relay/control/model/paging.ts).
  app.get(
    '/api/v1/tokens',
    { schema: { querystring: PageQuery, response: { 200: TokenList, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireAdmin(p, 'list access keys');
      const after = decodeContinue('tokens', req.query.continue);
      const page = await ctx.store.accessKeyPage({
        limit: pageLimit(req.query.limit, TOKEN_PAGE),
        after: after === null ? null : { createdAt: after[0], id: after[1] },
      });
      const items = page.items.map((k) => ({
        id: k.id,
        role: k.role,
        description: k.description,
        createdAt: new Date(k.createdAt).toISOString(),
        expiresAt: isoOrNull(k.expiresAt),
        revokedAt: isoOrNull(k.revokedAt),
      }));
      if (page.next === null) return { items };
      return { items, continue: encodeContinue('tokens', [page.next.createdAt, page.next.id]) };
    },
  );

  app.delete(
    '/api/v1/tokens/:id',
    { schema: { params: IdParams, response: { 200: Revoked, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      requireAdmin(p, 'revoke access keys');
      const audit = auditEntry(ctx, req, actorOf(p), 'token.revoke', req.params.id);
      const result = await ctx.store.revokeAccessKey(req.params.id, ctx.clock.wallNow(), audit);
      const shownId = JSON.stringify(req.params.id.slice(0, 64));
      if (result === 'not-found') {
        throw new TunnelError('NOT_FOUND', `access key ${shownId} does not exist or is already revoked`);
      }
      if (result === 'last-admin') {
        throw new TunnelError(
          'CONFLICT',
          `access key ${shownId} is the last active admin key; create another first ` +
            '(tunnel-relay token create --role admin), then revoke this one',
        );
      }
      logAudit(ctx, audit);
      return { revoked: req.params.id };
    },
  );
};
