/**
 * `GET /api/v1/network` (no credentials): where agents of this relay connect, as a registration tells them, so
 * `tunnel-client egress` lists the same destinations before joining as after: the DERP URL, the hub's UDP endpoint
 * (null while none is served) and the STUN responder (null when off). Nothing here is secret: these are the
 * relay's public ports.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { RelayNetwork } from '../../../../shared/api/network.js';
import { type RelayContext, relayEndpoints } from '../../../context/context.js';

export const networkRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get('/api/v1/network', { schema: { response: { 200: RelayNetwork } } }, async () =>
    relayEndpoints(ctx),
  );
};
