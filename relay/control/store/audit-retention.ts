/**
 * What the audit log keeps, in both stores: every row younger than `auditRetentionMs` (by its `at`), and older rows
 * while they are within the newest `maxAuditRows`. Every AUDIT_PRUNE_EVERY-th row written runs a prune in the same
 * transaction: rows more than `maxAuditRows` ids behind the new one are deleted when older than the retention.
 * Younger rows past the cap are kept and counted (Store.onAuditOverCap), so a flood of writes grows the table
 * instead of erasing recent history; the per-key write budget (relay/control/model/write-budget.ts) bounds how fast it grows.
 */
import type { StoreLimits } from './types.js';

/** A prune runs when the new row's id is a multiple of this. */
export const AUDIT_PRUNE_EVERY = 1000;

/** Whether writing row `id` runs a prune. */
export function auditPruneDue(id: number, limits: Pick<StoreLimits, 'maxAuditRows'>): boolean {
  return id > limits.maxAuditRows && id % AUDIT_PRUNE_EVERY === 0;
}

/** The prune after writing row `id` at `now`: rows up to `cut` older than `olderThan` go. */
export function auditPrune(
  id: number,
  now: number,
  limits: Pick<StoreLimits, 'maxAuditRows' | 'auditRetentionMs'>,
): { cut: number; olderThan: number } {
  return { cut: id - limits.maxAuditRows, olderThan: now - limits.auditRetentionMs };
}

/** Deletes the rows up to id `p(1)` written before `p(2)`. */
export function pruneAuditSql(p: (i: number) => string): string {
  return `DELETE FROM audit WHERE id <= ${p(1)} AND at < ${p(2)}`;
}

/** The rows left up to id `p(1)` (after a prune: the young rows over the cap). */
export function auditUpToSql(p: (i: number) => string): string {
  return `SELECT COUNT(*) AS n FROM audit WHERE id <= ${p(1)}`;
}
