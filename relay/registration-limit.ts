/**
 * What a refused registration costs its source. Bootstrap PSKs and access keys are 32 random bytes,
 * so the limit is not there to stop guessing; it bounds the warnings a source that keeps failing
 * causes (one when the limit starts instead of one per attempt) and tells it when to come back.
 * It is applied only to attempts that failed: a valid credential registers from any source at any
 * time, so nobody can lock an agent out by failing in its name or from its address.
 */
import type { FastifyReply } from 'fastify';
import { TunnelError } from '../shared/errors.js';
import type { RelayContext } from './context.js';

const REJECTED = 'bootstrap credential refused';

/** Whole seconds until `remainingMs` has passed (at least 1). */
export function retryAfterSeconds(remainingMs: number): number {
  return Math.max(1, Math.ceil(remainingMs / 1000));
}

function rateLimited(ctx: RelayContext, reply: FastifyReply, source: string, remainingMs: number): never {
  const seconds = retryAfterSeconds(remainingMs);
  const { max, windowMs } = ctx.limiter.bySource.options;
  const at = new Date(ctx.clock.wallNow() + seconds * 1000).toISOString();
  reply.header('retry-after', String(seconds));
  ctx.metrics.registrations.inc({ result: 'rate_limited' });
  throw new TunnelError(
    'RATE_LIMITED',
    `source ${source} had ${max} failed registrations within ${windowMs / 1000} s; retry after ${seconds} s ` +
      `(${at}); a valid credential is still accepted`,
  );
}

/**
 * Refuses a registration whose credential failed: 401 BOOTSTRAP_REJECTED counted against `source`,
 * or, once the source has used up its failures, 429 RATE_LIMITED with Retry-After (no warning).
 */
export async function refuseRegistration(
  ctx: RelayContext,
  reply: FastifyReply,
  attempt: { source: string; cluster: string },
): Promise<never> {
  const { source, cluster } = attempt;
  const outcome = await ctx.limiter.bySource.failUnlessLimited(source);
  if ('limited' in outcome) rateLimited(ctx, reply, source, outcome.limited.remainingMs);
  const after = outcome.counted;
  ctx.metrics.registrations.inc({ result: 'rejected' });
  ctx.log.warn({ cluster, source }, 'registration refused');
  if (after.limited) {
    ctx.log.warn(
      { source, failures: after.failures, retryAfterSeconds: retryAfterSeconds(after.remainingMs) },
      'registration failures from this source reached the limit: further failures answer 429 until the window ends',
    );
  }
  throw new TunnelError('BOOTSTRAP_REJECTED', REJECTED);
}
