/** Cluster routes: create, list, get, accept, deny, rotate-psk, delete (the kubeconfig: kubeconfig.ts). */

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Cluster as ClusterSchema, Deleted } from '../../../../shared/api/cluster.js';
import {
  ClusterWithBootstrap,
  CreateClusterBody,
  RotatePskBody,
} from '../../../../shared/api/cluster-create.js';
import { TunnelError } from '../../../../shared/errors.js';
import { generatePresharedKey, keyToBase64 } from '../../../../shared/keys.js';
import { parseHttpUrl } from '../../../../shared/kit/cli/parsers.js';
import { shellQuote } from '../../../../shared/kit/cli/shell-quote.js';
import { parseDuration } from '../../../../shared/kit/duration.js';
import {
  auditEntry,
  clusterDetailView,
  clusterView,
  logAudit,
  principalOf,
  type RelayContext,
} from '../../../context/context.js';
import { hashSecret, newId, newSecret } from '../../../ops/secrets.js';
import {
  actorOf,
  clusterNotFound,
  requireClusterRead,
  requireClusterWrite,
  visibleCluster,
} from '../../model/auth.js';
import { clusterImpersonates } from '../../model/impersonation.js';
import { installCommand, installUrl } from '../../model/install-command.js';
import { issueInstallLink } from '../../model/install-link.js';
import { checkName } from '../../model/names.js';
import { ERROR_REPLIES, NameParams } from '../../model/schemas.js';
import { checkAgentReplicas } from '../../store/agent-replicas.js';
import type { ClusterRecord, NewSecret } from '../../store/types.js';
import { clusterAgentRoutes } from './cluster-agents.js';
import { clusterListRoutes } from './cluster-list.js';
import { installRoutes } from './install.js';
import { pathHistoryRoutes } from './path-history.js';

const DEFAULT_PSK_TTL = '24h';

export interface JoinCommandParts {
  readonly publicUrl: string;
  readonly cluster: string;
  readonly psk: string;
  readonly caPin: string | null;
  /** The agent's default upstream (`cluster create --upstream`), or null to leave the agent's own default. */
  readonly upstream: string | null;
}

/**
 * The agent's join command. The PSK goes in the environment (TUNNEL_CLIENT_PSK), not in argv where `ps` shows it to
 * every local user; without a pin the agent verifies the relay against its system trust store.
 */
export function joinCommand(p: JoinCommandParts): string {
  const pin = p.caPin === null ? '' : ` --ca-pin ${p.caPin}`;
  const upstream = p.upstream === null ? '' : ` --upstream ${shellQuote(p.upstream)}`;
  return `TUNNEL_CLIENT_PSK=${p.psk} tunnel-client join --relay ${p.publicUrl} --cluster ${p.cluster}${pin}${upstream}`;
}

/** The body's `upstream` for the join command, checked before anything is issued (BAD_INPUT naming it). */
function upstreamOf(text: string | undefined): string | null {
  return text === undefined ? null : parseHttpUrl(text, 'upstream');
}

interface IssuedPsk {
  psk: string;
  /** The token of the PSK's one-time install link. */
  installToken: string;
  expiresAt: number;
  record: NewSecret;
}

function issuePsk(ctx: RelayContext, cluster: string, ttlText: string | undefined): IssuedPsk {
  const ttl = parseDuration(ttlText ?? DEFAULT_PSK_TTL, 'pskTtl');
  const psk = newSecret('psk');
  const id = newId('p_');
  const link = issueInstallLink(cluster, id, psk);
  const expiresAt = ctx.clock.wallNow() + ttl;
  return {
    psk,
    installToken: link.token,
    expiresAt,
    record: { id, hash: hashSecret(psk), expiresAt, install: link.record },
  };
}

function bootstrapView(ctx: RelayContext, cluster: string, issued: IssuedPsk, upstream: string | null) {
  const url = installUrl(ctx.publicUrl(), issued.installToken);
  return {
    psk: issued.psk,
    expiresAt: new Date(issued.expiresAt).toISOString(),
    joinCommand: joinCommand({
      publicUrl: ctx.publicUrl(),
      cluster,
      psk: issued.psk,
      caPin: ctx.caPin,
      upstream,
    }),
    installUrl: url,
    installCommand: installCommand({ url, cluster, caPin: ctx.caPin, caPem: ctx.caPem }),
  };
}

const errors = ERROR_REPLIES;

export const clusterRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  await app.register(installRoutes, { ctx });
  await app.register(pathHistoryRoutes, { ctx });
  await app.register(clusterListRoutes, { ctx });
  await app.register(clusterAgentRoutes, { ctx });
  app.post(
    '/api/v1/clusters',
    { schema: { body: CreateClusterBody, response: { 201: ClusterWithBootstrap, ...errors } } },
    async (req, reply) => {
      const p = await principalOf(ctx, req);
      const group = checkName(req.body.group ?? 'default', 'group');
      requireClusterWrite(p, group, `create clusters in group ${group}`);
      const name = checkName(req.body.name, 'cluster name');
      const upstream = upstreamOf(req.body.upstream);
      const agentReplicas = checkAgentReplicas(req.body.agentReplicas ?? 1);
      const issued = issuePsk(ctx, name, req.body.pskTtl);
      const audit = auditEntry(ctx, req, actorOf(p), 'cluster.create', name, {
        group,
        agentReplicas,
        pskId: issued.record.id,
      });
      const c = await ctx.store.createCluster(
        {
          name,
          group,
          displayName: req.body.displayName ?? name,
          createdAt: ctx.clock.wallNow(),
          agentReplicas,
        },
        issued.record,
        audit,
      );
      logAudit(ctx, audit);
      ctx.hooks.clusterChanged(c.name);
      reply.code(201);
      return { cluster: clusterView(ctx, c), bootstrap: bootstrapView(ctx, name, issued, upstream) };
    },
  );

  app.get(
    '/api/v1/clusters/:name',
    { schema: { params: NameParams, response: { 200: ClusterSchema, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterRead(p, c.group, `read clusters in group ${c.group}`);
      const [psk, [reported], impersonation, agents] = await Promise.all([
        ctx.store.currentPsk(c.name, ctx.clock.wallNow()),
        ctx.store.agentPaths(c.name),
        clusterImpersonates(ctx, c.name),
        ctx.store.listAgents(c.name),
      ]);
      return clusterDetailView(ctx, c, psk, reported, impersonation, agents);
    },
  );

  for (const action of ['accept', 'deny'] as const) {
    app.post(
      `/api/v1/clusters/:name/${action}`,
      { schema: { params: NameParams, response: { 200: ClusterSchema, ...errors } } },
      async (req) => {
        const p = await principalOf(ctx, req);
        const before = await visibleCluster(ctx.store, p, req.params.name);
        requireClusterWrite(p, before.group, `${action} clusters in group ${before.group}`);
        if (action === 'accept') requireAgentWaiting(before);
        const status = action === 'accept' ? 'Accepted' : 'Denied';
        const audit = auditEntry(ctx, req, actorOf(p), `cluster.${action}`, before.name, {
          from: before.status,
        });
        const agents = action === 'deny' ? await ctx.store.listAgents(before.name) : [];
        const c = await ctx.store.setClusterStatus(
          before.name,
          { status, now: ctx.clock.wallNow(), presharedKey: keyToBase64(generatePresharedKey()) },
          audit,
        );
        if (!c) throw clusterNotFound(before.name);
        logAudit(ctx, audit);
        ctx.hooks.clusterChanged(c.name);
        if (action === 'accept' && before.status !== 'Accepted') ctx.hooks.announce(c);
        // Every agent of the cluster (its primary and replicas) loses access.
        for (const a of agents) ctx.hooks.emit('cluster-denied', { cluster: c.name, publicKey: a.publicKey });
        return clusterView(ctx, c);
      },
    );
  }

  app.post(
    '/api/v1/clusters/:name/rotate-psk',
    {
      schema: { params: NameParams, body: RotatePskBody, response: { 200: ClusterWithBootstrap, ...errors } },
    },
    async (req) => {
      const p = await principalOf(ctx, req);
      const before = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterWrite(p, before.group, `rotate PSKs in group ${before.group}`);
      const upstream = upstreamOf(req.body.upstream);
      const issued = issuePsk(ctx, before.name, req.body.pskTtl);
      const audit = auditEntry(ctx, req, actorOf(p), 'cluster.rotate-psk', before.name, {
        pskId: issued.record.id,
      });
      const c = await ctx.store.rotatePsk(before.name, issued.record, audit);
      if (!c) throw clusterNotFound(before.name);
      logAudit(ctx, audit);
      ctx.hooks.clusterChanged(c.name);
      return { cluster: clusterView(ctx, c), bootstrap: bootstrapView(ctx, c.name, issued, upstream) };
    },
  );

  app.delete(
    '/api/v1/clusters/:name',
    { schema: { params: NameParams, response: { 200: Deleted, ...errors } } },
    async (req) => {
      const p = await principalOf(ctx, req);
      const before = await visibleCluster(ctx.store, p, req.params.name);
      requireClusterWrite(p, before.group, `delete clusters in group ${before.group}`);
      const audit = auditEntry(ctx, req, actorOf(p), 'cluster.delete', before.name);
      const agents = await ctx.store.listAgents(before.name);
      const c = await ctx.store.deleteCluster(before.name, audit);
      if (!c) throw clusterNotFound(before.name);
      logAudit(ctx, audit);
      ctx.hooks.forget(c.name);
      ctx.hooks.clusterChanged(c.name);
      for (const a of agents) ctx.hooks.emit('cluster-deleted', { cluster: c.name, publicKey: a.publicKey });
      return { deleted: c.name };
    },
  );
};

/**
 * Accept decides on a registered agent: refused with NO_AGENT_WAITING while none has registered (a cluster made
 * with `cluster create` needs no accept: the agent that joins with its PSK is accepted then). A Denied cluster may
 * be accepted again with or without one.
 */
function requireAgentWaiting(c: ClusterRecord): void {
  if (c.publicKey !== null || c.status === 'Denied') return;
  throw new TunnelError(
    'NO_AGENT_WAITING',
    `cluster ${c.name} has no agent waiting for acceptance: no agent has registered yet; run the join command from 'cluster create' or 'cluster rotate-psk ${c.name}' on the agent's host`,
  );
}
