/**
 * GET /api/v1/events: the live cluster feed as server-sent events (docs/API.md "Events"; the feed:
 * relay/control/events/). Any key that may list clusters opens one; a group-scoped key sees its group's clusters
 * only. Caps (docs/LIMITS.md): MAX_STREAMS in all, MAX_STREAMS_PER_KEY per access key, MAX_QUEUED_BYTES of
 * changes waiting per stream.
 */
import type { FastifyPluginAsync } from 'fastify';
import { TunnelError } from '../../../../shared/errors.js';
import { principalOf, type RelayContext } from '../../../context/context.js';
import { ClusterFeed } from '../../events/cluster-feed.js';
import { eventsFamilies } from '../../events/events-metrics.js';
import { type StreamLimits, StreamRegistry } from '../../events/stream-registry.js';
import { requireClusterRead } from '../../model/auth.js';
import { PostgresStore } from '../../store/postgres.js';

export const MAX_STREAMS = 128;
/** A console tab holds one. */
export const MAX_STREAMS_PER_KEY = 8;
export const MAX_QUEUED_BYTES = 2 * 1024 * 1024;
/** With a store shared by replicas: how often the feed reads the cluster list for the others' changes. */
export const RECONCILE_MS = 5_000;

/**
 * `?snapshot=false`: no snapshot, `ready` at once, then the changes (a client that pages GET /api/v1/clusters
 * itself, as the console does, and wants only what changes); absent or `true`: the snapshot first.
 */
function snapshotOf(query: unknown): boolean {
  const value = (query as Record<string, unknown> | undefined)?.snapshot;
  if (value === undefined || value === 'true') return true;
  if (value === 'false') return false;
  throw new TunnelError(
    'BAD_INPUT',
    `snapshot ${JSON.stringify(value)} is not valid: expected true or false`,
  );
}

export interface EventsRouteOptions {
  ctx: RelayContext;
  /** Caps (defaults above); tests lower them. */
  limits?: Partial<StreamLimits>;
}

export const eventsRoutes: FastifyPluginAsync<EventsRouteOptions> = async (app, { ctx, limits = {} }) => {
  const shared = ctx.store instanceof PostgresStore;
  const feed = new ClusterFeed(ctx, { reconcileMs: shared ? RECONCILE_MS : null });
  const registry = new StreamRegistry({
    ctx,
    feed,
    limits: {
      maxStreams: limits.maxStreams ?? MAX_STREAMS,
      maxStreamsPerKey: limits.maxStreamsPerKey ?? MAX_STREAMS_PER_KEY,
      maxQueuedBytes: limits.maxQueuedBytes ?? MAX_QUEUED_BYTES,
    },
  });
  const removeCollector = ctx.metrics.addCollector(() =>
    eventsFamilies(registry.stats, registry.size, feed.size),
  );

  app.get('/api/v1/events', async (req, reply) => {
    const p = await principalOf(ctx, req);
    requireClusterRead(p, null, 'watch clusters');
    if (p.kind !== 'key') throw new TunnelError('FORBIDDEN', 'an agent credential may not watch clusters');
    const snapshot = snapshotOf(req.query);
    await feed.ready();
    // No await from the cap check to the registration: concurrent opens cannot overshoot the caps.
    registry.checkRoom(p);
    const stream = registry.open(p, reply.raw, { snapshot });
    // The request (a GET) is complete: read its end so the connection no longer counts as pending for its source.
    req.raw.resume();
    reply.hijack();
    stream.start();
  });

  // Streams never finish on their own: end them before the server waits for in-flight requests.
  app.addHook('preClose', async () => registry.endAll());
  app.addHook('onClose', async () => {
    removeCollector();
    registry.close();
    feed.close();
  });
};
