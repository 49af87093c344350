/**
 * The caps on Pending clusters that bootstrap-key registrations create (migration 9 records the key on the
 * cluster): at most `maxPendingPerKey` per key and `maxPendingRegistrations` in all, counted in the registration's
 * own transaction so concurrent registrations cannot pass them. A cluster counts while it is Pending; accepting or
 * denying it frees its place. Clusters an operator creates (`cluster create`) carry no key and are not counted.
 */
import type { StoreLimits } from './types.js';

export interface PendingCounts {
  inAll: number;
  byKey: number;
}

/** The cap a new Pending registration would pass, or null when there is room. */
export interface PendingCap {
  scope: 'key' | 'relay';
  max: number;
}

/** Pending clusters created by registrations, in all and of bootstrap key `p(1)`. */
export function pendingCountsSql(p: (i: number) => string): string {
  return `SELECT COUNT(*) AS "inAll", COUNT(CASE WHEN bootstrap_key = ${p(1)} THEN 1 END) AS "byKey"
    FROM clusters WHERE status = 'Pending' AND bootstrap_key IS NOT NULL`;
}

export function pendingCapOf(
  counts: PendingCounts,
  limits: Pick<StoreLimits, 'maxPendingPerKey' | 'maxPendingRegistrations'>,
): PendingCap | null {
  if (counts.byKey >= limits.maxPendingPerKey) return { scope: 'key', max: limits.maxPendingPerKey };
  if (counts.inAll >= limits.maxPendingRegistrations) {
    return { scope: 'relay', max: limits.maxPendingRegistrations };
  }
  return null;
}
