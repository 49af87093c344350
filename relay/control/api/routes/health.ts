/**
 * /healthz (process up), /readyz (store answers and the relay is not draining), /metrics (Prometheus text).
 * No credentials.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TunnelError } from '../../../../shared/errors.js';
import type { RelayContext } from '../../../context/context.js';
import { graceMs } from '../../model/conditions.js';
import { AGENTS_RELAYED_METRIC, agentsRelayedSamples } from '../../model/relayed-reason-metrics.js';
import { PATH_REPORT_STALE_MS } from '../../store/agent-path-row.js';

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

  app.get('/metrics', async (_req, reply) => {
    const byStatus = await ctx.store.countClustersByStatus();
    // Fresh = renewed within the grace (now < renew + grace), the same rule as Available=True.
    const fresh = await ctx.store.countLeasesSince(
      ctx.clock.wallNow() - graceMs(ctx.config.leaseDurationSeconds) + 1,
    );
    const connected = ctx.hooks.connectedCount;
    const relayed = await ctx.store.relayedReasonCounts(ctx.clock.wallNow() - PATH_REPORT_STALE_MS + 1);
    reply.type('text/plain; version=0.0.4; charset=utf-8');
    return ctx.metrics.render([
      {
        name: 'tunnel_relay_clusters',
        help: 'Clusters by registration status.',
        samples: Object.entries(byStatus).map(([status, n]) => [{ status }, n]),
      },
      {
        name: 'tunnel_relay_leases_fresh',
        help: 'Clusters whose lease is fresh (Available=True).',
        samples: [[{}, fresh]],
      },
      {
        name: 'tunnel_relay_agents_connected',
        help: 'Clusters with a live agent session.',
        samples: [[{}, connected]],
      },
      {
        name: AGENTS_RELAYED_METRIC,
        help: "Agents relayed now by the reason their cluster shows and who reported it (agent, hub), from the store's reports.",
        samples: agentsRelayedSamples(relayed),
      },
      {
        name: 'tunnel_relay_registration_limiter_entries',
        help: 'Sources being counted for failed registrations.',
        samples: [[{ by: 'source' }, await ctx.limiter.bySource.size()]],
      },
    ]);
  });
};
