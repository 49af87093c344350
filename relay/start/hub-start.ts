/**
 * startHub: a hub-mode relay (the default `serve --mode all`, also spelt `hub`): one Fastify server on one TLS port, each concern an
 * encapsulated plugin. On first start in an empty data dir it creates the TLS certificate, the hub node's
 * WireGuard key pair and the first admin access key (returned once as `adminKey`).
 */
import type { Server as HttpsServer } from 'node:https';
import type { FastifyInstance } from 'fastify';
import { type Clock, realClock } from '../../shared/clock.js';
import { keyToBase64 } from '../../shared/keys.js';
import type { OnModeFixed } from '../../shared/kit/secret-file.js';
import { udpSocketName } from '../../shared/net/tunnel-endpoint/udp-gso.js';
import { defaultAead } from '../../shared/net/wireguard/crypto/aead.js';
import type { RelayContext } from '../context/context.js';
import { renderMetrics } from '../control/api/routes/health.js';
import { stunFamilies } from '../data/stun/stun-metrics.js';
import type { RelayConfig } from '../ops/config/config.js';
import { readOpenFileLimit } from '../ops/http/open-file-limit.js';
import { createLogger } from '../ops/logger.js';
import { UndoStack } from '../ops/undo-stack.js';
import { adminKeyRecovery, warnIfNoAdminKey } from './admin-key.js';
import { logAgentChanges } from './agent-log.js';
import { decorateClientAddress } from './client-address.js';
import { createRelayApp, httpLimitsOf, type RelayApp } from './fastify-app.js';
import { hubContext } from './hub-context.js';
import { registerHubRoutes } from './hub-routes.js';
import { ensureAdminKey } from './identity.js';
import { CLOSE_GRACE_MS } from './limits.js';
import { listenOn, warnAtStart } from './listen.js';
import { openPorts, type RelayPorts } from './ports.js';
import type { RunningRelay, StartOptions } from './server.js';
import { closer, drainRelay } from './shutdown.js';
import { certificateExpiryFamilies, loadTlsTrust, type TlsTrust } from './tls-trust.js';

/** Issued only once every port is bound: a start that fails before this leaves the next one to issue it. */
async function firstAdminKey(ctx: RelayContext): Promise<string | null> {
  const now = ctx.clock.wallNow();
  const adminKey = await ensureAdminKey(ctx.store, now);
  if (adminKey === null) await warnIfNoAdminKey(ctx.store, now, ctx.log, adminKeyRecovery(ctx.config));
  return adminKey;
}

interface Started {
  ctx: RelayContext;
  ports: RelayPorts;
  trust: TlsTrust;
  relayApp: RelayApp;
  boundUrl: string;
  /** What the UDP port runs on (udp-gso.ts udpSocketName). */
  udpSocket: string;
}

/** Joins the fleet's mesh (if any) and logs where the relay listens. */
async function announce(s: Started, openFileLimit: number | null): Promise<void> {
  const { ctx, ports, trust } = s;
  const expiry = certificateExpiryFamilies(trust);
  ctx.metrics.addCollector(() => expiry);
  const { log, config } = ctx;
  if (ports.stun !== null) {
    const responder = ports.stun;
    ctx.metrics.addCollector(() => stunFamilies(responder.stats));
    log.info({ host: config.listen.host, port: responder.port }, 'STUN responder listening (udp)');
  }
  ports.metrics?.serve(async () => ({
    contentType: ctx.metrics.contentType,
    body: await renderMetrics(ctx),
  }));
  await ctx.mesh?.start(s.boundUrl);
  const limits = httpLimitsOf(config, openFileLimit);
  log.info(
    {
      url: s.boundUrl,
      publicUrl: ctx.publicUrl(),
      caPin: trust.pin,
      plainHttp: config.plainHttp,
      wireguardCipher: defaultAead().name,
      udpSocket: s.udpSocket,
      metricsUrl: ports.metrics ? `http://${config.metricsListen?.host}:${ports.metrics.port}/metrics` : null,
      http: limits,
    },
    'relay listening',
  );
  warnAtStart({ log, publicUrl: ctx.publicUrl(), trust, limits, openFileLimit });
}

function runningHub(s: Started, hubPrivateKey: Buffer, adminKey: string | null): RunningRelay {
  const { ctx, ports, relayApp } = s;
  const app = relayApp.app;
  const closeWithin = closer({
    app,
    closing: relayApp.closing,
    // Other replicas stop sending requests here; the agents' locations held here are cleared.
    before: async () => {
      await ctx.mesh?.stop();
      await ports.stun?.close();
    },
    after: async () => {
      relayApp.detachGuard();
      await ports.metrics?.close();
      await ports.udp?.close();
      await ctx.store.close();
      ctx.hooks.removeAllListeners();
    },
  });
  const relay: RunningRelay = {
    url: s.boundUrl,
    publicUrl: ctx.publicUrl(),
    caPin: s.trust.pin ?? '',
    caPem: s.trust.pem ?? '',
    plainHttp: ctx.config.plainHttp,
    hubPublicKey: keyToBase64(ctx.hubPublicKey),
    hubPrivateKey,
    fastify: app,
    httpsServer: app.server as HttpsServer,
    store: ctx.store,
    hooks: ctx.hooks,
    log: ctx.log,
    context: ctx,
    stun: ports.stun,
    close: () => closeWithin(CLOSE_GRACE_MS),
    drain: (graceMs) =>
      drainRelay({
        drain: ctx.drain,
        clock: ctx.clock,
        log: ctx.log,
        agents: () => ctx.hooks.connectedCount,
        words: { inFlight: 'hub requests', move: 'Restarting' },
        graceMs,
        closeWithin,
      }),
  };
  if (adminKey !== null) relay.adminKey = adminKey;
  return relay;
}

export async function startHub(config: RelayConfig, opts: StartOptions = {}): Promise<RunningRelay> {
  const clock: Clock = opts.clock ?? realClock;
  const log = createLogger(config.logLevel, opts.logStream);
  const onModeFixed: OnModeFixed = (fix) =>
    log.warn({ code: 'INSECURE_FILE_MODE', file: fix.file, oldMode: fix.oldMode }, fix.message);
  // Settings and ports before anything is written or issued: a bad file or a taken port fails the start with
  // the data dir as it was, so the next start still issues the admin key.
  const udpSocket = udpSocketName();
  const undo = new UndoStack();
  const ports = await openPorts(config, clock, undo);
  const trust = await undo.guard(async () => loadTlsTrust(config, clock.wallNow(), onModeFixed));
  const bound = { url: '' };
  const { ctx, hub } = await undo.guard(() =>
    hubContext({
      config,
      clock,
      log,
      onModeFixed,
      trust,
      udp: ports.udp,
      store: opts.store,
      undo,
      boundUrl: () => bound.url,
    }),
  );
  const openFileLimit = readOpenFileLimit();
  const limits = httpLimitsOf(config, openFileLimit);
  const relayApp = createRelayApp({
    tls: trust.tls,
    limits,
    log,
    metrics: ctx.metrics,
    drain: ctx.drain,
    proxyProtocol: config.proxyProtocol,
    ticketSecret: config.mesh.key,
  });
  // Moving the agents: other replicas forget them here first, then the data plane sends them away.
  ctx.drain.onMove(() => ctx.mesh?.stop());
  const app: FastifyInstance = relayApp.app;
  decorateClientAddress(app, ctx.mesh?.key ?? null);
  await undo.guard(() => registerHubRoutes(app, ctx, opts.plugins ?? []));
  logAgentChanges({ hooks: ctx.hooks, store: ctx.store, log });
  bound.url = await undo.guard(() => listenOn(app, config, ports.listen));
  try {
    const adminKey = await firstAdminKey(ctx);
    const started: Started = { ctx, ports, trust, relayApp, boundUrl: bound.url, udpSocket };
    await announce(started, openFileLimit);
    return runningHub(started, hub.privateKey, adminKey);
  } catch (err) {
    await app.close();
    return undo.abort(err);
  }
}
