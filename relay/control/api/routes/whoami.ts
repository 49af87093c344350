/** GET /api/v1/whoami: the calling access key's id, role and group, so a client can offer only what it may do. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { WhoAmI } from '../../../../shared/api/whoami.js';
import { TunnelError } from '../../../../shared/errors.js';
import { principalOf, type RelayContext } from '../../../context/context.js';
import { proxyScope } from '../../model/auth.js';

export const whoamiRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get(
    '/api/v1/whoami',
    { schema: { response: { 200: WhoAmI, 401: ErrorBody, 403: ErrorBody } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      if (p.kind !== 'key' || proxyScope(p) !== null) {
        throw new TunnelError('FORBIDDEN', 'only an access key may ask whoami');
      }
      return {
        keyId: p.id,
        role: p.role,
        group: p.group,
        expiresAt: p.expiresAt === null ? null : new Date(p.expiresAt).toISOString(),
      };
    },
  );
};
