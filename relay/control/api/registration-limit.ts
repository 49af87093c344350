/**
 * What a refused registration costs its source. Bootstrap PSKs and access keys are 32 random bytes,
 * so the limit is not there to stop guessing; it bounds the warnings a source that keeps failing
 * causes (one when the limit starts instead of one per attempt) and tells it when to come back.
 * It is applied only to attempts that failed: a valid credential registers from any source at any
 * time, so nobody can lock an agent out by failing in its name or from its address.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import { auditEntry, logAudit, type RelayContext } from '../../context/context.js';
import type { RegistrationRefusal } from '../store/psk-refusal.js';

/**
 * One message whatever the reason (no oracle for PSK probing), naming only the cluster the caller asked to join;
 * the real reason goes to the audit log as `cluster.register.refused`.
 */
export function rejectedMessage(cluster: string): string {
  return (
    'the relay refused the bootstrap PSK or key: it is wrong, already used, expired or rotated, or the cluster ' +
    `was deleted (which one is not said). Fix: on the hub run \`tunnel-relay cluster rotate-psk ${cluster}\` (or ` +
    `\`cluster create ${cluster}\` if it was deleted), then run the new join command it prints`
  );
}

/** Why a registration was refused, as the audit log records it. */
export type RefusalReason = RegistrationRefusal | 'not-bootstrap' | 'rate-limited';

async function auditRefusal(
  ctx: RelayContext,
  req: FastifyRequest,
  attempt: { cluster: string; reason: RefusalReason; via: string; detail?: Record<string, unknown> },
): Promise<void> {
  const entry = auditEntry(ctx, req, attempt.via, 'cluster.register.refused', attempt.cluster, {
    reason: attempt.reason,
    ...attempt.detail,
  });
  await ctx.store.appendAudit(entry);
  logAudit(ctx, entry);
}

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
 * or, once the source has used up its failures, 429 RATE_LIMITED with Retry-After (no warning, no audit row).
 */
export async function refuseRegistration(
  ctx: RelayContext,
  http: { req: FastifyRequest; reply: FastifyReply },
  attempt: { source: string; cluster: string; reason: RegistrationRefusal | 'not-bootstrap'; via: string },
): Promise<never> {
  const { source, cluster } = attempt;
  const outcome = await ctx.limiter.bySource.failUnlessLimited(source);
  // 429s are not audited one by one (a flood of them would push real rows out of the bounded audit
  // log): the source's refusals are, up to the limit, then one `rate-limited` row when it starts.
  if ('limited' in outcome) rateLimited(ctx, http.reply, source, outcome.limited.remainingMs);
  await auditRefusal(ctx, http.req, attempt);
  const after = outcome.counted;
  if (after.limited) {
    const retryAfter = retryAfterSeconds(after.remainingMs);
    await auditRefusal(ctx, http.req, {
      ...attempt,
      reason: 'rate-limited',
      detail: { retryAfterSeconds: retryAfter },
    });
  }
  ctx.metrics.registrations.inc({ result: 'rejected' });
  ctx.log.warn({ cluster, source }, 'registration refused');
  if (after.limited) {
    ctx.log.warn(
      { source, failures: after.failures, retryAfterSeconds: retryAfterSeconds(after.remainingMs) },
      'registration failures from this source reached the limit: further failures answer 429 until the window ends',
    );
  }
  throw new TunnelError('BOOTSTRAP_REJECTED', rejectedMessage(cluster));
}
