/**
 * Reports the audit rows the store kept past `--audit-max-rows` because they are younger than `--audit-retention`
 * (relay/control/store/audit-retention.ts): a gauge with the count the last prune found, and a warning at most once per
 * WARN_EVERY_MS while it stays over, so a write flood shows in the logs without one line per prune.
 */
import type { FastifyInstance } from 'fastify';
import type { RelayContext } from '../../context/context.js';
import { gaugeFamily } from '../../ops/metrics.js';

export const WARN_EVERY_MS = 10 * 60_000;

export function watchAuditOverCap(app: FastifyInstance, ctx: RelayContext): void {
  let kept = 0;
  let warnedAt: number | null = null;
  const removeListener = ctx.store.onAuditOverCap((count) => {
    kept = count;
    const now = ctx.clock.now();
    if (warnedAt !== null && now - warnedAt < WARN_EVERY_MS) return;
    warnedAt = now;
    const { auditMaxRows, auditRetentionMs } = ctx.config.controlLimits;
    ctx.log.warn(
      { keptOverCap: count, auditMaxRows, auditRetentionHours: auditRetentionMs / 3_600_000 },
      'audit log: rows past --audit-max-rows are kept because they are younger than --audit-retention; ' +
        'the table grows until they age (see which access keys write them: tunnel-relay audit --actor KEY)',
    );
  });
  const removeCollector = ctx.metrics.addCollector(() => [
    gaugeFamily(
      'tunnel_relay_audit_rows_over_cap',
      'Audit rows past --audit-max-rows kept because they are younger than --audit-retention (at the last prune).',
      kept,
    ),
  ]);
  app.addHook('onClose', async () => {
    removeListener();
    removeCollector();
  });
}
