/**
 * A relay-mode replica's own routes (no credentials): /healthz (process up), /readyz (not draining, and at least
 * one hub replica is live and answered its last readiness probe: a balancer sends nothing to a replica that could
 * not forward it), /metrics (its forwarding counters and connections).
 */
import type { FastifyInstance } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import type { Metrics } from '../../ops/metrics.js';
import { counterFamily, type Family, gaugeFamily, oneSample } from '../../ops/metrics.js';
import type { DrainState } from '../drain.js';
import type { HubPool } from './hub-pool.js';
import type { TierStats } from './tier-stats.js';

export interface TierHealthOptions {
  drain: DrainState;
  pool: HubPool;
  metrics: Metrics;
  /** /metrics is served on `--metrics-listen` instead (tier-start.ts hands it the exposition). */
  metricsElsewhere: boolean;
}

export function tierFamilies(s: TierStats, pool: HubPool, agents: () => number): Family[] {
  const p = 'tunnel_relay_tier_';
  return [
    counterFamily(
      `${p}forwarded_total`,
      'Requests forwarded to a hub replica, by kind (/derp counts as upgrade).',
      [
        [{ kind: 'connect' }, s.forwarded.connect],
        [{ kind: 'upgrade' }, s.forwarded.upgrade],
        [{ kind: 'request' }, s.forwarded.request],
      ],
    ),
    counterFamily(`${p}forward_failures_total`, 'Requests that could not be forwarded.', oneSample(s.failed)),
    gaugeFamily(`${p}forwards_open`, 'Forwarded connections open now.', s.open),
    gaugeFamily(`${p}agents`, 'Agents whose /derp connection passes through this replica.', agents()),
    gaugeFamily(`${p}hub_replicas`, 'Hub replicas live in the store at the last heartbeat.', pool.liveCount),
    gaugeFamily(
      `${p}hub_replicas_ready`,
      'Hub replicas that answered their last readiness probe.',
      pool.readyCount,
    ),
  ];
}

export async function registerTierHealth(app: FastifyInstance, o: TierHealthOptions): Promise<void> {
  app.get('/healthz', async (_req, reply) => {
    reply.type('text/plain; charset=utf-8');
    return 'ok\n';
  });
  app.get('/readyz', async (_req, reply) => {
    if (o.drain.draining) throw new TunnelError('CLOSED', 'the relay is draining (it is shutting down)');
    if (o.pool.readyCount === 0) {
      throw new TunnelError(
        'CLOSED',
        `no hub replica is live and ready (${o.pool.liveCount} live in the store); nothing could be forwarded`,
      );
    }
    reply.type('text/plain; charset=utf-8');
    return 'ready\n';
  });
  if (o.metricsElsewhere) return;
  app.get('/metrics', async (_req, reply) => {
    reply.type(o.metrics.contentType);
    return o.metrics.render([]);
  });
}
