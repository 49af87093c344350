/**
 * `GET /api/v1/install/:token`: a cluster's agent manifests (tunnel-relay manifests agent, defaults)
 * with its bootstrap PSK inside, served once per link (relay/control/model/install-link.ts) and needing no other
 * credential. A used link answers 410 INSTALL_LINK_USED, one whose PSK expired, was replaced or was
 * used 410 INSTALL_LINK_EXPIRED, an unknown token 404 NOT_FOUND; each refusal counts against the
 * source's failure budget (relay/ops/rate-limit.ts, shared with registrations); once it is used up, refusals
 * answer 429 until its window ends, while a valid link is still served from that source. `HEAD` answers 200 with
 * the GET's headers and no body, without looking the token up, so a link scanner's HEAD never uses a link.
 */
import { type FastifyPluginAsyncTypebox, Type } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { TunnelError } from '../../../../shared/errors.js';
import { auditEntry, clientAddress, logAudit, type RelayContext } from '../../../context/context.js';
import { hashSecret, secretKind } from '../../../ops/secrets.js';
import {
  AGENT_DEFAULT_RESOURCES,
  agentManifests,
  DEFAULT_UPSTREAM,
} from '../../manifests/agent-manifests.js';
import { DEFAULT_GROUP_BINDINGS } from '../../manifests/agent-rbac.js';
import { DEFAULT_NAMESPACE, defaultImage } from '../../manifests/flag-values.js';
import { renderManifests } from '../../manifests/render.js';
import { openInstallLink } from '../../model/install-link.js';
import { InstallParams } from '../../model/schemas.js';
import { retryAfterSeconds } from '../registration-limit.js';

type Refusal = { reason: 'unknown' } | { reason: 'used' | 'expired'; cluster: string };

function refusal(r: Refusal): TunnelError {
  if (r.reason === 'unknown') return new TunnelError('NOT_FOUND', 'no such install link');
  const again = `run tunnel-relay cluster rotate-psk ${r.cluster} for a new one`;
  return r.reason === 'used'
    ? new TunnelError(
        'INSTALL_LINK_USED',
        `this install link of cluster ${r.cluster} was already used; ${again}`,
      )
    : new TunnelError(
        'INSTALL_LINK_EXPIRED',
        `the PSK of this install link of cluster ${r.cluster} expired, was replaced or was used; ${again}`,
      );
}

/** A refused fetch: its specific error, or 429 once the source has used up its failures (no warning). */
async function refuse(ctx: RelayContext, reply: FastifyReply, source: string, r: Refusal): Promise<never> {
  reply.header('cache-control', 'no-store');
  const outcome = await ctx.limiter.bySource.failUnlessLimited(source);
  if ('limited' in outcome) {
    const seconds = retryAfterSeconds(outcome.limited.remainingMs);
    reply.header('retry-after', String(seconds));
    throw new TunnelError(
      'RATE_LIMITED',
      `source ${source} had too many refused requests; retry after ${seconds} s (a valid link is still served)`,
    );
  }
  ctx.log.warn({ source, reason: r.reason }, 'install link refused');
  throw refusal(r);
}

function renderFor(
  ctx: RelayContext,
  cluster: string,
  psk: string,
  c: { group: string; agentReplicas: number },
): string {
  const objects = agentManifests({
    namespace: DEFAULT_NAMESPACE,
    image: defaultImage(),
    relay: ctx.publicUrl(),
    cluster,
    psk,
    caPin: ctx.caPin,
    upstream: DEFAULT_UPSTREAM,
    allow: [],
    proxy: { httpsProxy: null, httpProxy: null, noProxy: null, caPem: null },
    storageSize: '64Mi',
    resources: AGENT_DEFAULT_RESOURCES,
    group: c.group,
    replicas: c.agentReplicas,
    bindings: DEFAULT_GROUP_BINDINGS,
  });
  return renderManifests(objects, [
    `tunnel-client for cluster ${cluster}, served once by ${ctx.publicUrl()}`,
  ]);
}

export const installRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  // HEAD (link scanners, previews) answers what a GET would carry in its headers, without looking the token up:
  // it neither uses the link nor counts as a failure. Fastify would otherwise run the GET handler for HEAD.
  app.head('/api/v1/install/:token', { schema: { params: InstallParams } }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    reply.type('application/yaml; charset=utf-8');
    return reply.send();
  });

  app.get(
    '/api/v1/install/:token',
    {
      exposeHeadRoute: false,
      schema: {
        params: InstallParams,
        response: { 200: Type.String(), 404: ErrorBody, 410: ErrorBody, 429: ErrorBody },
      },
    },
    async (req, reply) => {
      const token = req.params.token;
      if (secretKind(token) !== 'install')
        return refuse(ctx, reply, clientAddress(ctx, req), { reason: 'unknown' });
      const audit = auditEntry(ctx, req, 'install-link', 'cluster.install-link', '');
      const taken = await ctx.store.takeInstallLink(hashSecret(token), ctx.clock.wallNow(), audit);
      if (!taken.ok) return refuse(ctx, reply, clientAddress(ctx, req), taken);
      const psk = openInstallLink(token, taken);
      if (psk === null) throw new TunnelError('INTERNAL', 'install link cannot be opened');
      logAudit(ctx, { ...audit, target: taken.cluster, detail: { pskId: taken.pskId } });
      reply.header('cache-control', 'no-store');
      reply.type('application/yaml; charset=utf-8');
      // The cluster's agent replicas run as that many pods of the StatefulSet, each joining with the PSK.
      const c = (await ctx.store.getCluster(taken.cluster)) ?? { group: 'default', agentReplicas: 1 };
      return renderFor(ctx, taken.cluster, psk, c);
    },
  );
};
