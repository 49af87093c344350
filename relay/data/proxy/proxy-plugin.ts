/**
 * The relay's data plane with the hub's proxies: mounts the DERP server and hub node (data-plane.ts),
 * opens streams on the hub endpoint's stream binding (hub-streams.ts), and serves
 *   CONNECT <cluster>.clusters.local:<port>       (https server 'connect')
 *   /api/v1/clusters/:name/proxy[/*]              (Fastify routes, hijacked; Upgrade via 'upgrade')
 * Its counters (streams, proxy results) are exported on /metrics (proxy-metrics.ts).
 * The relay's data plane plugin: `startRelay(config, { plugins: [hubProxyPlugin()] })`.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import { parseKey } from '../../../shared/keys.js';
import type { RelayContext } from '../../context/context.js';
import { LivePipes } from '../../control/api/live-pipes.js';
import { graceMs } from '../../control/model/conditions.js';
import { meshFamilies } from '../../fleet/mesh/mesh-metrics.js';
import { ARRIVAL_WAIT_MS, type MeshRouting, MeshTurns } from '../../fleet/mesh/mesh-routing.js';
import { meshStatsOf } from '../../fleet/mesh/mesh-screen.js';
import { type DataPlane, type DataPlaneOptions, mountDataPlane } from '../plane/data-plane.js';
import { attachConnectProxy, type ConnectProxyStats } from './connect-proxy.js';
import { HubFailureLog } from './hub-failure-log.js';
import { HubStreams, type HubStreamsOptions } from './hub-streams.js';
import {
  handleProxyUpgrade,
  newPathProxyStats,
  type PathProxyStats,
  registerPathProxy,
} from './path-proxy.js';
import { pipeFamilies, proxyFamilies, streamFamilies } from './proxy-metrics.js';
import { writeErrorResponse } from './raw-response.js';

export interface HubProxyOptions {
  /** DERP limits, hub node settings (stream binding tuning in `hub.streams`), test hooks. */
  dataPlane?: DataPlaneOptions;
  streams?: Partial<Pick<HubStreamsOptions, 'openTimeoutMs' | 'disconnectGraceMs'>>;
}

export interface HubProxy {
  readonly dataPlane: DataPlane;
  readonly streams: HubStreams;
  readonly connectStats: ConnectProxyStats;
  readonly pathStats: PathProxyStats;
  readonly pipes: LivePipes;
}

export function hubProxyPlugin(
  opts: HubProxyOptions = {},
  onMounted?: (p: HubProxy) => void,
): (app: FastifyInstance, ctx: RelayContext) => Promise<void> {
  return async (app, ctx) => {
    const dp = await mountDataPlane(app, ctx, opts.dataPlane);
    const streams = new HubStreams({
      ...opts.streams,
      ctx,
      clock: ctx.clock,
      dataPlane: {
        binding: dp.hub.endpoint.streams,
        isSessionUp: (k) => dp.hub.status(k)?.connected === true,
        isRelayConnected: (k) => dp.derp.isConnected(parseKey(k, 'agent key')),
        hasOtherLiveAgent: (cluster, k) => {
          for (const [key, s] of ctx.hooks.agentConnections(cluster))
            if (key !== k && s.connected) return true;
          return false;
        },
      },
    });
    const offAgentRun = dp.hub.onAgentRun((agent) => streams.replaceSession(agent));
    const pathStats = newPathProxyStats();
    const pipes = new LivePipes({ ctx, credentials: ctx.store });
    const failures = new HubFailureLog(ctx.log, ctx.clock);
    const mesh: MeshRouting = {
      node: ctx.mesh ?? null,
      stats: meshStatsOf(ctx),
      localAgents: (c) => streams.localAgents(c.name),
      turns: new MeshTurns(),
      // An agent whose lease is fresh is alive: when it has a session nowhere, it is reconnecting.
      arrivalWaitMs: (c) =>
        c.leaseRenewAt !== null &&
        ctx.clock.wallNow() - c.leaseRenewAt < graceMs(ctx.config.leaseDurationSeconds)
          ? ARRIVAL_WAIT_MS
          : 0,
    };
    // An 'upgrade' listener of our own (ahead of the DERP server's) takes every Upgrade path but /derp;
    // with two listeners the DERP server no longer answers other paths with 404.
    const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      const path = (req.url ?? '').split('?', 1)[0];
      if (path === '/derp') return;
      ctx.drain.noteActivity();
      if (handleProxyUpgrade({ ctx, streams, pipes, stats: pathStats, mesh, failures }, req, socket, head))
        return;
      writeErrorResponse(socket, 404, new TunnelError('NOT_FOUND', `no Upgrade endpoint at ${path}`));
    };
    app.server.prependListener('upgrade', onUpgrade);
    const connectStats: ConnectProxyStats = { established: 0, failed: {} };
    const detachConnect = attachConnectProxy({
      server: app.server,
      ctx,
      streams,
      pipes,
      stats: connectStats,
      mesh,
    });
    registerPathProxy(app, { ctx, streams, pipes, stats: pathStats, mesh, failures });
    // A CONNECT is traffic for the drain's quiet wait (the connect proxy above answers it).
    const onConnectTraffic = (): void => ctx.drain.noteActivity();
    app.server.on('connect', onConnectTraffic);
    // A drain moves the agents once no hub request is in flight (or its grace runs out).
    const untrack = ctx.drain.track({ name: 'hub streams', count: () => streams.binding.streamCount });
    const removeCollector = ctx.metrics.addCollector(() => [
      ...streamFamilies(streams.binding),
      ...proxyFamilies(connectStats, pathStats),
      ...pipeFamilies(pipes),
      ...meshFamilies(mesh.stats),
    ]);
    app.addHook('preClose', async () => {
      untrack();
      app.server.off('connect', onConnectTraffic);
      removeCollector();
      detachConnect();
      app.server.off('upgrade', onUpgrade);
      offAgentRun();
      streams.close();
      pipes.close();
    });
    onMounted?.({ dataPlane: dp, streams, connectStats, pathStats, pipes });
  };
}
