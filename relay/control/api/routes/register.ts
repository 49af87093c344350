/**
 * Registration and the agent's own calls: POST /register (cluster PSK or bootstrap key),
 * GET /agent, POST /agent/lease, DELETE /agent.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { AgentInfo as AgentReply, Unjoined } from '../../../../shared/api/agent-info.js';
import { LeaseBody, LeaseReply } from '../../../../shared/api/lease.js';
import { RegisterBody, RegisterReply } from '../../../../shared/api/registration.js';
import { TunnelError } from '../../../../shared/errors.js';
import { generatePresharedKey, keyToBase64 } from '../../../../shared/keys.js';
import { deepMerge } from '../../../../shared/kit/values/deep-merge.js';
import {
  auditEntry,
  clientAddress,
  logAudit,
  principalOf,
  type RelayContext,
  tunnelView,
} from '../../../context/context.js';
import { sourceKey } from '../../../ops/http/source-address.js';
import { hashSecret, newId, newSecret, secretKind } from '../../../ops/secrets.js';
import { parseAgentReason } from '../../model/agent-reason.js';
import { bearerToken, type Principal, parseRole } from '../../model/auth.js';
import { graceMs } from '../../model/conditions.js';
import { checkName } from '../../model/names.js';
import { agentPublicKey } from '../../model/reserved-keys.js';
import { ERROR_REPLIES } from '../../model/schemas.js';
import { readClusterValues, readPlatformValues, valuesVersion } from '../../model/values.js';
import type { RegistrationRefusal } from '../../store/psk-refusal.js';
import type { ClusterRecord } from '../../store/types.js';
import { refuseRegistration } from '../registration-limit.js';

const errors = ERROR_REPLIES;

async function agentOf(
  ctx: RelayContext,
  req: FastifyRequest,
): Promise<{ p: Principal & { kind: 'agent' }; c: ClusterRecord }> {
  const p = await principalOf(ctx, req);
  if (p.kind !== 'agent') throw new TunnelError('FORBIDDEN', 'this route takes an agent credential');
  // A replica's credential sees the cluster as that replica holds it (its address and key: store/agent-replicas.ts).
  const byKey = p.publicKey === null ? null : await ctx.store.findClusterByKey(p.publicKey);
  const c = byKey?.name === p.cluster ? byKey : await ctx.store.getCluster(p.cluster);
  if (!c) throw new TunnelError('UNAUTHENTICATED', 'missing, unknown, expired or revoked credential');
  if (c.status === 'Denied')
    throw new TunnelError('CLUSTER_DENIED', `cluster "${c.name}" was denied by an administrator`);
  return { p, c };
}

/**
 * 429 LIMIT_EXCEEDED for a registration past a Pending cap (relay/control/store/pending-caps.ts), naming the cap and its
 * setting. Not audited and not counted against the source: the key was valid, and a flood of refusals must not
 * fill the audit log.
 */
function pendingCapError(cap: { scope: 'key' | 'relay'; max: number }, actor: string): TunnelError {
  const fix =
    'accept or deny the waiting clusters (tunnel-relay cluster list --status awaiting-acceptance) before more join';
  if (cap.scope === 'key') {
    return new TunnelError(
      'LIMIT_EXCEEDED',
      `pending registrations per bootstrap key: ${actor} already has ${cap.max} Pending clusters ` +
        `(--max-pending-per-key); ${fix}`,
    );
  }
  return new TunnelError(
    'LIMIT_EXCEEDED',
    `pending registrations: the relay already holds ${cap.max} Pending clusters created by bootstrap keys ` +
      `(--max-pending-registrations); ${fix}`,
  );
}

export async function clusterValuesVersion(ctx: RelayContext, name: string): Promise<string> {
  const [platform, own] = await Promise.all([readPlatformValues(ctx), readClusterValues(ctx, name)]);
  return valuesVersion(deepMerge(platform, own ?? {}));
}

export const registerRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.post(
    '/api/v1/register',
    { schema: { body: RegisterBody, response: { 201: RegisterReply, ...errors } } },
    async (req, reply) => {
      const name = checkName(req.body.cluster, 'cluster');
      // Only failures are limited (relay/control/api/registration-limit.ts): a valid credential always registers.
      const fail = (reason: RegistrationRefusal | 'not-bootstrap', via: string): Promise<never> =>
        refuseRegistration(
          ctx,
          { req, reply },
          { source: sourceKey(clientAddress(ctx, req)), cluster: name, reason, via },
        );
      const token = bearerToken(req);
      const kind = token === null ? null : secretKind(token);
      let via: { kind: 'psk'; pskHash: string } | { kind: 'bootstrap'; keyId: string; group: string };
      let actor: string;
      if (token !== null && kind === 'psk') {
        via = { kind: 'psk', pskHash: hashSecret(token) };
        actor = `psk:${name}`;
      } else if (token !== null && kind === 'accessKey') {
        const k = await ctx.store.findAccessKey(hashSecret(token));
        const now = ctx.clock.wallNow();
        if (!k) return fail('wrong', 'bootstrap');
        if (k.revokedAt !== null) return fail('revoked', `bootstrap:${k.id}`);
        if (k.expiresAt !== null && k.expiresAt <= now) return fail('expired', `bootstrap:${k.id}`);
        if (parseRole(k.role) !== 'bootstrap') return fail('not-bootstrap', `bootstrap:${k.id}`);
        via = { kind: 'bootstrap', keyId: k.id, group: 'default' };
        actor = `bootstrap:${k.id}`;
      } else {
        return fail('wrong', 'unknown');
      }
      const publicKey = agentPublicKey(req.body.publicKey, ctx.reservedKeys);
      const now = ctx.clock.wallNow();
      const credential = newSecret('agent');
      const audit = auditEntry(ctx, req, actor, 'cluster.register', name, { publicKey, via: via.kind });
      const result = await ctx.store.register(
        {
          cluster: name,
          publicKey,
          agentVersion: req.body.agentVersion,
          claims: req.body.claims ?? {},
          now,
          credential: { id: newId('a_'), hash: hashSecret(credential), expiresAt: null },
          presharedKey: keyToBase64(generatePresharedKey()),
          via,
        },
        audit,
      );
      if (!result.ok) {
        if (result.reason === 'rejected') return fail(result.why, actor);
        if (result.reason === 'pending-cap') {
          ctx.metrics.registrations.inc({ result: 'pending_cap' });
          throw pendingCapError(result, actor);
        }
        if (result.reason === 'replicas-full') {
          ctx.metrics.registrations.inc({ result: 'conflict' });
          throw new TunnelError(
            'AGENT_REPLICAS_FULL',
            `cluster "${name}" already holds its ${result.max} agent keys (--agent-replicas ${result.max}); unjoin one of them (tunnel-client unjoin) or delete and create the cluster with more --agent-replicas`,
          );
        }
        ctx.metrics.registrations.inc({ result: 'conflict' });
        throw new TunnelError(
          'CONFLICT',
          result.reason === 'key-in-use'
            ? 'publicKey is already registered to another cluster'
            : `cluster "${name}" exists and is not a Pending registration of this publicKey`,
        );
      }
      logAudit(ctx, audit);
      const c = result.cluster;
      ctx.hooks.clusterChanged(c.name);
      if (result.replacedPublicKey !== null) {
        // A re-join with a new key: the old key loses access (its sessions close).
        ctx.hooks.emit('agent-unjoined', { cluster: c.name, publicKey: result.replacedPublicKey });
      }
      ctx.hooks.announce(c);
      ctx.metrics.registrations.inc({ result: c.status === 'Accepted' ? 'accepted' : 'pending' });
      reply.code(201);
      return { cluster: c.name, status: c.status, agentCredential: credential, tunnel: tunnelView(ctx, c) };
    },
  );

  app.get('/api/v1/agent', { schema: { response: { 200: AgentReply, ...errors } } }, async (req) => {
    const { c } = await agentOf(ctx, req);
    return {
      cluster: c.name,
      status: c.status,
      tunnel: tunnelView(ctx, c),
      valuesVersion: await clusterValuesVersion(ctx, c.name),
    };
  });

  // The heartbeat route: one credential lookup (joined with the cluster's status) and one UPDATE.
  // Logged at warn so 10,000 agents do not write 330 request lines a second; counted in metrics.
  app.post(
    '/api/v1/agent/lease',
    { logLevel: 'warn', schema: { body: LeaseBody, response: { 200: LeaseReply, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      if (p.kind !== 'agent') throw new TunnelError('FORBIDDEN', 'this route takes an agent credential');
      if (p.status === 'Denied') {
        throw new TunnelError('CLUSTER_DENIED', `cluster "${p.cluster}" was denied by an administrator`);
      }
      const c = { name: p.cluster };
      const lease = ctx.config.leaseDurationSeconds;
      const agentReason = parseAgentReason(req.body.relayedReason);
      const renewed = await ctx.store.renewLease(c.name, {
        now: ctx.clock.wallNow(),
        publicKey: p.publicKey,
        graceMs: graceMs(lease),
        agentReason: agentReason.reason,
        claims: req.body.claims,
        agentVersion: req.body.agentVersion,
      });
      if (!renewed) throw new TunnelError('CONFLICT', `cluster "${c.name}" has no registered agent`);
      ctx.hooks.clusterChanged(c.name);
      ctx.hooks.emit('agent-reason', { cluster: c.name, reason: agentReason.reason });
      ctx.metrics.leaseRenewals.inc();
      if (agentReason.ignored) ctx.metrics.leaseReasonsIgnored.inc();
      return {
        leaseDurationSeconds: lease,
        renewAfterSeconds: lease,
        valuesVersion: await clusterValuesVersion(ctx, c.name),
        takesRelayedReason: true,
      };
    },
  );

  app.delete('/api/v1/agent', { schema: { response: { 200: Unjoined, ...errors } } }, async (req) => {
    const { p, c } = await agentOf(ctx, req);
    const audit = auditEntry(ctx, req, `agent:${p.cluster}`, 'cluster.unjoin', c.name);
    const before = await ctx.store.unjoin(c.name, ctx.clock.wallNow(), audit, p.publicKey);
    if (before) logAudit(ctx, audit);
    if (before?.publicKey) ctx.hooks.emit('agent-unjoined', { cluster: c.name, publicKey: before.publicKey });
    ctx.hooks.forget(c.name);
    ctx.hooks.clusterChanged(c.name);
    return { unjoined: c.name };
  });
};
