/**
 * Charges the write budget (write-budget.ts) of the access key behind every mutating call of the control-plane
 * API: POST, PUT, PATCH and DELETE under /api/v1/ (registrations with a bootstrap key included), not the path
 * proxy (its calls go to the cluster and write no audit row) and not agent credentials or PSKs (an agent's writes
 * are its lease, which writes none). It runs as a preHandler, after the body was checked, so a request the
 * schema refuses costs nothing; a request past the budget gets 429 RATE_LIMITED with Retry-After and writes
 * nothing. A credential that does not authenticate is left to the route (401).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import type { RelayContext } from '../../context/context.js';
import { counterFamily, gaugeFamily, oneSample } from '../../ops/metrics.js';
import { secretKind } from '../../ops/secrets.js';
import { authenticate, bearerToken } from '../model/auth.js';
import { WriteBudget } from '../model/write-budget.js';
import { retryAfterSeconds } from './registration-limit.js';

const MUTATING: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The access key id whose budget the request spends, or null when it spends none. */
async function chargedKey(ctx: RelayContext, req: FastifyRequest): Promise<string | null> {
  const route = req.routeOptions.url ?? '';
  if (!MUTATING.has(req.method) || !route.startsWith('/api/v1/') || route.includes('/proxy')) return null;
  const token = bearerToken(req);
  if (token === null || secretKind(token) !== 'accessKey') return null;
  try {
    const p = await authenticate(ctx.store, token, ctx.clock.wallNow());
    return p.kind === 'key' ? p.id : null;
  } catch {
    return null;
  }
}

/** Adds the hook to `app` (the root instance: it covers every route registered after it). */
export function installWriteBudget(app: FastifyInstance, ctx: RelayContext): void {
  const perMinute = ctx.config.controlLimits.writeBudgetPerMinute;
  const budget = new WriteBudget(ctx.clock, { perMinute, maxKeys: 10_000 });
  const removeCollector = ctx.metrics.addCollector(() => [
    counterFamily(
      'tunnel_relay_write_budget_refused_total',
      'Mutating API calls refused with 429 RATE_LIMITED: the access key had spent its write budget.',
      oneSample(budget.refused),
    ),
    gaugeFamily(
      'tunnel_relay_write_budget_keys',
      'Access keys whose write budget is being tracked.',
      budget.size,
    ),
  ]);
  app.addHook('onClose', async () => removeCollector());
  app.addHook('preHandler', async (req, reply) => {
    const keyId = await chargedKey(ctx, req);
    if (keyId === null) return;
    const spent = budget.spend(keyId);
    if (spent.ok) return;
    const seconds = retryAfterSeconds(spent.retryAfterMs);
    reply.header('retry-after', String(seconds));
    throw new TunnelError(
      'RATE_LIMITED',
      `access key ${keyId} used its write budget of ${perMinute} mutating calls a minute (--write-budget); ` +
        `retry after ${seconds} s`,
    );
  });
}
