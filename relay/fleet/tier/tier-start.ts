/**
 * startRelayTier: a relay-mode replica (`serve --mode relay`). It terminates TLS with the fleet certificate and
 * forwards everything over the mesh to the hub replicas (tier-forward.ts); it holds no hub key (none is read or
 * created: config-mode.ts refuses --hub-key-file, identity.ts loadHubKey refuses this mode), no WireGuard UDP port
 * and no admin key of its own. It needs the fleet's PostgreSQL store (membership and agent locations) and mesh key.
 */
import type { Logger } from 'pino';
import { type Clock, realClock } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import type { OnModeFixed } from '../../../shared/kit/secret-file.js';
import type { RelayConfig } from '../../ops/config/config.js';
import type { MeshKey } from '../../ops/config/mesh-settings.js';
import { describeTarget } from '../../ops/config/postgres-url.js';
import { readOpenFileLimit } from '../../ops/http/open-file-limit.js';
import { createLogger } from '../../ops/logger.js';
import { Metrics } from '../../ops/metrics.js';
import { UndoStack } from '../../ops/undo-stack.js';
import { decorateClientAddress } from '../../start/client-address.js';
import { createRelayApp, httpLimitsOf, type RelayApp } from '../../start/fastify-app.js';
import { CLOSE_GRACE_MS } from '../../start/limits.js';
import { listenOn, warnAtStart } from '../../start/listen.js';
import { openPorts, type RelayPorts } from '../../start/ports.js';
import type { RunningRelay, StartOptions } from '../../start/server.js';
import { closer, drainRelay } from '../../start/shutdown.js';
import { openStore } from '../../start/store-open.js';
import { certificateExpiryFamilies, loadTlsTrust, type TlsTrust } from '../../start/tls-trust.js';
import { DrainState } from '../drain.js';
import { joinTierFleet, type TierFleet } from './tier-fleet.js';
import { TierForwarder } from './tier-forward.js';
import { registerTierHealth, tierFamilies } from './tier-health.js';
import { newTierStats } from './tier-stats.js';

/** What serve and tests see of a relay-mode replica. */
export type RunningRelayTier = Pick<
  RunningRelay,
  'url' | 'publicUrl' | 'caPin' | 'caPem' | 'plainHttp' | 'fastify' | 'log' | 'close' | 'drain'
> & {
  /** Hub replicas that answered their last readiness probe. */
  readyHubs(): number;
};

interface TierParts {
  config: RelayConfig;
  log: Logger;
  key: MeshKey;
  clock: Clock;
  trust: TlsTrust;
  ports: RelayPorts;
  fleet: TierFleet;
  relayApp: RelayApp;
  forwarder: TierForwarder;
  drain: DrainState;
}

function running(p: TierParts, boundUrl: string): RunningRelayTier {
  const { relayApp, fleet, ports, forwarder } = p;
  const log = p.log;
  const closeWithin = closer({
    app: relayApp.app,
    closing: relayApp.closing,
    before: async () => {
      await fleet.membership.stop();
      await ports.stun?.close();
    },
    after: async () => {
      relayApp.detachGuard();
      await ports.metrics?.close();
      await fleet.store.close();
    },
  });
  return {
    url: boundUrl,
    publicUrl: p.config.publicUrl ?? boundUrl,
    caPin: p.trust.pin ?? '',
    caPem: p.trust.pem ?? '',
    plainHttp: false,
    fastify: relayApp.app,
    log,
    readyHubs: () => fleet.pool.readyCount,
    close: () => closeWithin(CLOSE_GRACE_MS),
    drain: (graceMs) =>
      drainRelay({
        drain: p.drain,
        clock: p.clock,
        log,
        agents: () => forwarder.agents,
        words: { inFlight: 'forwarded requests', move: 'ending their /derp connections' },
        graceMs,
        closeWithin,
      }),
  };
}

/** The Fastify server with the health routes and the forwarder, ready to listen. */
async function tierApp(
  p: Omit<TierParts, 'relayApp' | 'forwarder'>,
  log: RunningRelay['log'],
  openFileLimit: number | null,
) {
  const metrics = new Metrics();
  const limits = httpLimitsOf(p.config, openFileLimit);
  const relayApp = createRelayApp({
    tls: p.trust.tls,
    limits,
    log,
    metrics,
    drain: p.drain,
    proxyProtocol: p.config.proxyProtocol,
    ticketSecret: p.config.mesh.key,
  });
  // Request log lines name the client (a relay-mode replica takes no mesh requests: no key).
  decorateClientAddress(relayApp.app, null);
  const stats = newTierStats();
  const key = p.key;
  const forwarder = new TierForwarder({
    pool: p.fleet.pool,
    key,
    caPin: p.trust.pin ?? '',
    drain: p.drain,
    log,
    stats,
  });
  await registerTierHealth(relayApp.app, {
    drain: p.drain,
    pool: p.fleet.pool,
    metrics,
    metricsElsewhere: p.ports.metrics !== null,
  });
  p.ports.metrics?.serve(async () => ({ contentType: metrics.contentType, body: await metrics.render([]) }));
  forwarder.attach(relayApp.app);
  metrics.addCollector(() => tierFamilies(stats, p.fleet.pool, () => forwarder.agents));
  const expiry = certificateExpiryFamilies(p.trust);
  metrics.addCollector(() => expiry);
  await relayApp.app.ready();
  return { relayApp, forwarder, limits };
}

export async function startRelayTier(
  config: RelayConfig,
  opts: Pick<StartOptions, 'clock' | 'logStream'> = {},
): Promise<RunningRelayTier> {
  const clock = opts.clock ?? realClock;
  const log = createLogger(config.logLevel, opts.logStream);
  const onModeFixed: OnModeFixed = (fix) =>
    log.warn({ code: 'INSECURE_FILE_MODE', file: fix.file, oldMode: fix.oldMode }, fix.message);
  const key = config.mesh.key;
  if (key === null) {
    throw new TunnelError(
      'BAD_CONFIG',
      "mesh-key-file: --mode relay forwards over the mesh; give the fleet's key",
    );
  }
  const undo = new UndoStack();
  const ports = await openPorts(config, clock, undo);
  const trust = await undo.guard(async () => loadTlsTrust(config, clock.wallNow(), onModeFixed));
  const store = await undo.guard(() =>
    openStore(config, { onModeFixed, onStoreError: (m) => log.warn({ code: 'STORE_CONNECTION' }, m) }),
  );
  undo.push(() => store.close());
  const storeName = config.store.kind === 'postgres' ? describeTarget(config.store.target) : 'sqlite';
  const fleet = await undo.guard(() =>
    joinTierFleet({ store, storeName, caPin: trust.pin ?? '', mesh: config.mesh, log }),
  );
  const drain = new DrainState(clock);
  const openFileLimit = readOpenFileLimit();
  const base = { config, log, key, clock, trust, ports, fleet, drain };
  const { relayApp, forwarder, limits } = await undo.guard(() => tierApp(base, log, openFileLimit));
  const boundUrl = await undo.guard(() => listenOn(relayApp.app, config, ports.listen));
  try {
    await fleet.membership.start(config.mesh.url ?? boundUrl);
  } catch (err) {
    await relayApp.app.close();
    return undo.abort(err);
  }
  const publicUrl = config.publicUrl ?? boundUrl;
  log.info(
    { url: boundUrl, publicUrl, caPin: trust.pin, mode: 'relay', http: limits },
    'relay listening (relay mode: forwarding only, no hub key)',
  );
  warnAtStart({ log, publicUrl, trust, limits, openFileLimit });
  return running({ ...base, relayApp, forwarder }, boundUrl);
}
