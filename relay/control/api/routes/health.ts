/**
 * /healthz (process up), /readyz (store answers and the relay is not draining), /metrics (Prometheus text; its store gauges: ../store-gauges.ts).
 * No credentials. With `--metrics-listen` /metrics is not here but on that port alone.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TunnelError } from '../../../../shared/errors.js';
import type { RelayContext } from '../../../context/context.js';
import { storeGauges } from '../store-gauges.js';

/** The exposition /metrics answers, the store's gauges read now. */
export async function renderMetrics(ctx: RelayContext): Promise<string> {
  return ctx.metrics.render(await storeGauges(ctx));
}

export const healthRoutes: FastifyPluginAsyncTypebox<{ ctx: RelayContext }> = async (app, { ctx }) => {
  app.get('/healthz', async (_req, reply) => {
    reply.type('text/plain; charset=utf-8');
    return 'ok\n';
  });

  app.get('/readyz', async (_req, reply) => {
    if (ctx.drain.draining) throw new TunnelError('CLOSED', 'the relay is draining (it is shutting down)');
    try {
      await ctx.store.ping();
    } catch {
      throw new TunnelError('CLOSED', 'the store does not answer');
    }
    reply.type('text/plain; charset=utf-8');
    return 'ready\n';
  });

  // With --metrics-listen, /metrics is served on that port only (relay/ops/http/metrics-port.ts).
  if (ctx.config.metricsListen !== null) return;
  app.get('/metrics', async (_req, reply) => {
    reply.type(ctx.metrics.contentType);
    return renderMetrics(ctx);
  });
};
