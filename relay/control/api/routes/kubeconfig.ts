/**
 * POST /api/v1/clusters/:name/kubeconfig: a kubeconfig that reaches the cluster's API through the path
 * proxy, with a newly minted access key scoped to that one cluster's proxy (role `cluster-proxy:NAME`, or
 * `cluster-proxy-read:NAME` for a caller that may only read there). The key expires (`ttl`, default 24h,
 * at most 30d), shows in GET /api/v1/tokens and is revoked like any key, and with the cluster when it is
 * deleted; it is tied to the cluster's creation time, so a later cluster of the same name never accepts it.
 * Every other route refuses it. A non-admin key mints at most KUBECONFIG_MINTS per minute (429 RATE_LIMITED
 * beyond, relay/control/api/kubeconfig-mint-limit.ts) and holds at most maxLiveKeysPerMinter live ones (LIMIT_EXCEEDED).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '../../../../shared/api/error-body.js';
import { KubeconfigBody, MintedKubeconfig } from '../../../../shared/api/kubeconfig.js';
import { TunnelError } from '../../../../shared/errors.js';
import { parseDuration } from '../../../../shared/kit/duration.js';
import { auditEntry, logAudit, principalOf, type RelayContext } from '../../../context/context.js';
import { hashSecret, newId, newSecret } from '../../../ops/secrets.js';
import { actorOf, type KeyPrincipal, type Principal, type Role, visibleCluster } from '../../model/auth.js';
import { singleContextKubeconfig } from '../../model/kubeconfig-document.js';
import { mayUseProxy, requireProxy } from '../../model/proxy-auth.js';
import { NameParams } from '../../model/schemas.js';
import type { ClusterRecord } from '../../store/types.js';
import { chargeKubeconfigMint } from '../kubeconfig-mint-limit.js';

export const DEFAULT_KUBECONFIG_TTL = '24h';
export const MAX_KUBECONFIG_TTL_MS = 30 * 86_400_000;

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody };

/**
 * The scoped role to mint for `p` on cluster `c`, with the key minting it: read-write if `p` may write through its
 * proxy, else read (FORBIDDEN if not even that).
 */
function scopedRole(p: Principal, c: ClusterRecord): { role: Role; minter: KeyPrincipal } {
  if (p.kind === 'key' && mayUseProxy(p, c, 'write')) return { role: `cluster-proxy:${c.name}`, minter: p };
  return { role: `cluster-proxy-read:${c.name}`, minter: requireProxy(p, c, 'read') };
}

function ttlMs(text: string | undefined): number {
  const ms = parseDuration(text ?? DEFAULT_KUBECONFIG_TTL, 'ttl');
  if (ms > MAX_KUBECONFIG_TTL_MS) {
    throw new TunnelError('BAD_INPUT', `ttl: "${text}" is longer than the 30d a kubeconfig key may live`);
  }
  return ms;
}

/** The kubeconfig document: one cluster, user and context named `<cluster>-via-relay`. */
export function pathProxyKubeconfig(
  ctx: RelayContext,
  cluster: string,
  key: string,
): Record<string, unknown> {
  const name = `${cluster}-via-relay`;
  return singleContextKubeconfig(
    name,
    {
      server: `${ctx.publicUrl()}/api/v1/clusters/${cluster}/proxy`,
      // Without a CA (plain-http, no --public-ca-file) kubectl uses the system trust store.
      ...(ctx.caPem === null
        ? {}
        : { 'certificate-authority-data': Buffer.from(ctx.caPem).toString('base64') }),
    },
    // The relay's proxy authenticates this key and does not forward it upstream.
    { token: key },
  );
}

export const kubeconfigRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.post(
    '/api/v1/clusters/:name/kubeconfig',
    { schema: { params: NameParams, body: KubeconfigBody, response: { 201: MintedKubeconfig, ...errors } } },
    async (req, reply) => {
      const p = await principalOf(ctx, req);
      const c = await visibleCluster(ctx.store, p, req.params.name);
      const { role, minter } = scopedRole(p, c);
      const now = ctx.clock.wallNow();
      const expiresAt = now + ttlMs(req.body.ttl);
      chargeKubeconfigMint(ctx.limiter.kubeconfigMints, reply, minter);
      const id = newId('k_');
      const token = newSecret('accessKey');
      const audit = auditEntry(ctx, req, actorOf(p), 'token.create', id, { role, kubeconfig: c.name });
      const description = `kubeconfig for cluster ${c.name} (minted by ${actorOf(p)})`;
      await ctx.store.createAccessKey(
        {
          id,
          role,
          description,
          createdAt: now,
          expiresAt,
          revokedAt: null,
          minted: { by: minter.id, clusterCreatedAt: c.createdAt, role: minter.role },
        },
        hashSecret(token),
        audit,
      );
      logAudit(ctx, audit);
      reply.code(201);
      return {
        keyId: id,
        role,
        expiresAt: new Date(expiresAt).toISOString(),
        context: `${c.name}-via-relay`,
        kubeconfig: pathProxyKubeconfig(ctx, c.name, token),
      };
    },
  );
};
