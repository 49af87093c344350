/**
 * DELETE /api/v1/clusters/:name/agents/:publicKey: removes one registered agent of a cluster (an agent set scaled
 * down: the removed agents would stay registered, shown Disconnected, and keep the cluster Degraded). The agent's
 * credential is revoked, its tunnel address freed and its key's session ended (as its own `tunnel-client unjoin`
 * does); the cluster's other agents stay, and its PSK admits a new key in the freed place. Audited
 * `cluster.agent-remove`; whoever may write the cluster may remove its agents. `publicKey` is the agent's base64 key
 * as `cluster get` lists it (URL-encoded); a key that is no agent of the cluster is 404 NOT_FOUND naming it.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { TunnelError } from '../../../../shared/errors.js';
import { auditEntry, logAudit, principalOf, type RelayContext } from '../../../context/context.js';
import { actorOf, clusterNotFound, requireClusterWrite, visibleCluster } from '../../model/auth.js';
import { ERROR_REPLIES } from '../../model/schemas.js';

const AgentParams = Type.Object(
  { name: Type.String({ maxLength: 253 }), publicKey: Type.String({ maxLength: 64 }) },
  { additionalProperties: false },
);
const AgentRemoved = Type.Object(
  { cluster: Type.String(), removed: Type.String() },
  { additionalProperties: false },
);

export const clusterAgentRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.delete(
    '/api/v1/clusters/:name/agents/:publicKey',
    { schema: { params: AgentParams, response: { 200: AgentRemoved, ...ERROR_REPLIES } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterWrite(p, c.group, `remove agents in group ${c.group}`);
      const key = req.params.publicKey;
      const agent = (await ctx.store.listAgents(c.name)).find((a) => a.publicKey === key);
      if (!agent) {
        throw new TunnelError(
          'NOT_FOUND',
          `cluster '${c.name}' has no agent with key ${JSON.stringify(key)}`,
        );
      }
      const audit = auditEntry(ctx, req, actorOf(p), 'cluster.agent-remove', c.name, {
        publicKey: key,
        address: agent.address,
      });
      const before = await ctx.store.unjoin(c.name, ctx.clock.wallNow(), audit, key);
      if (!before) throw clusterNotFound(c.name);
      logAudit(ctx, audit);
      ctx.hooks.emit('agent-unjoined', { cluster: c.name, publicKey: key });
      ctx.hooks.forgetAgent(c.name, key);
      ctx.hooks.clusterChanged(c.name);
      return { cluster: c.name, removed: key };
    },
  );
};
