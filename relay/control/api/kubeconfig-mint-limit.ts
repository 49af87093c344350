/**
 * How many kubeconfigs (POST /api/v1/clusters/:name/kubeconfig) one access key may mint: KUBECONFIG_MINTS.max in
 * a window of KUBECONFIG_MINTS.windowMs that opens at its first mint, then 429 RATE_LIMITED with Retry-After
 * until the window ends. Each mint adds an access key, so the budget bounds how fast one caller grows the store;
 * how many of its kubeconfig keys may be live at once is the store's cap (maxLiveKeysPerMinter). Admin keys are
 * not limited here: they may create any key (POST /api/v1/tokens) anyway. The count is this relay process's (each
 * replica of a fleet keeps its own); the map is capped (FailureLimiter: the least recently counted key is dropped
 * first, which only lifts its limit).
 */
import type { FastifyReply } from 'fastify';
import type { Clock } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import { FailureLimiter } from '../../ops/rate-limit.js';
import type { KeyPrincipal } from '../model/auth.js';
import { retryAfterSeconds } from './registration-limit.js';

/** Kubeconfigs one key may mint per window, and the keys counted at once. */
export const KUBECONFIG_MINTS = { max: 20, windowMs: 60_000, maxEntries: 10_000 } as const;

export function kubeconfigMintLimiter(clock: Clock): FailureLimiter {
  return new FailureLimiter(clock, KUBECONFIG_MINTS);
}

/**
 * Counts a mint by `key` (admin keys are not counted); 429 RATE_LIMITED with Retry-After, naming the key id and
 * the limit, when the key has used its budget. Synchronous, so concurrent mints of a key are counted one by one.
 */
export function chargeKubeconfigMint(
  limiter: FailureLimiter,
  reply: FastifyReply,
  key: Pick<KeyPrincipal, 'id' | 'role'>,
): void {
  if (key.role === 'admin') return;
  const entry = limiter.fail(key.id);
  if (entry.failures <= limiter.options.max) return;
  const seconds = retryAfterSeconds(entry.remainingMs);
  reply.header('retry-after', String(seconds));
  throw new TunnelError(
    'RATE_LIMITED',
    `access key ${key.id} minted ${limiter.options.max} kubeconfigs within ${limiter.options.windowMs / 1000} s, ` +
      `the most a key may; retry after ${seconds} s`,
  );
}
