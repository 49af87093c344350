/**
 * startRelay: one Fastify server on one TLS port, each concern an encapsulated plugin. On first
 * start in an empty data dir it creates the TLS certificate, the hub node's WireGuard key pair and
 * the first admin access key (returned once as `adminKey`).
 */
import { X509Certificate } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { type Clock, realClock } from '../shared/clock.js';
import { type ErrorCode, isTunnelError, TunnelError } from '../shared/errors.js';
import { keyToBase64 } from '../shared/keys.js';
import { type OnModeFixed, warnOnStderr } from '../shared/secret-file.js';
import { defaultAead } from '../shared/wireguard/crypto/aead.js';
import { adminKeyRecovery, warnIfNoAdminKey } from './admin-key.js';
import type { RelayConfig } from './config.js';
import type { RelayContext } from './context.js';
import { DrainState } from './drain.js';
import { localFailureLimits } from './failure-limits.js';
import { RelayHooks } from './hooks.js';
import { ConnectionGuard } from './http/connection-guard.js';
import { answerExpectation, frameworkErrorReply } from './http/error-replies.js';
import { defaultMaxConnections, type HttpLimits, openFilesWarning } from './http/http-limits.js';
import { httpConnectionFamilies } from './http/http-metrics.js';
import { readOpenFileLimit } from './http/open-file-limit.js';
import { DebugRequestLog } from './http/request-log-controller.js';
import { addRequestChecks, nodeServerLimits } from './http/server-options.js';
import {
  ensureAdminKey,
  ensureDataDir,
  loadHubKey,
  loadOrCreateTls,
  loadPublicCa,
  type TlsIdentity,
} from './identity.js';
import { createLogger, redactUrl } from './logger.js';
import { checkFleet, type FleetStart, meshNodeOf } from './mesh/join-fleet.js';
import { Metrics } from './metrics.js';
import { holdListenPort, listenBindError } from './port-hold.js';
import { FailureLimiter } from './rate-limit.js';
import { ReservedKeys } from './reserved-keys.js';
import { auditRoutes } from './routes/audit.js';
import { clusterRoutes } from './routes/clusters.js';
import { consoleRoutes } from './routes/console.js';
import { eventsRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { kubeconfigRoutes } from './routes/kubeconfig.js';
import { networkRoutes } from './routes/network.js';
import { rateLimitRoutes } from './routes/rate-limits.js';
import { registerRoutes } from './routes/register.js';
import { tokenRoutes } from './routes/tokens.js';
import { valuesRoutes } from './routes/values.js';
import { whoamiRoutes } from './routes/whoami.js';
import { redactSecrets } from './secrets.js';
import { prepareDbFile } from './store/db-file.js';
import { PostgresStore } from './store/postgres.js';
import { describeTarget } from './store/postgres-url.js';
import { SqliteStore } from './store/sqlite.js';
import type { Store } from './store/types.js';
import { stunFamilies } from './stun/stun-metrics.js';
import { type StunResponder, startStunResponder } from './stun/stun-responder.js';
import { openHubUdp } from './udp/hub-udp.js';
import { UndoStack } from './undo-stack.js';

/** Request bodies over this get 413 PAYLOAD_TOO_LARGE. */
export const BODY_LIMIT = 64 * 1024;
/**
 * A TLS handshake not finished after this long is cut (Node's default is 120 s): bytes that are not TLS can
 * look like the start of a long record and would otherwise hold the socket open, as would a slow client.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/** close(): how long in-flight requests may take before their connections are cut. */
export const CLOSE_GRACE_MS = 10_000;
/**
 * drain(): the part of the grace kept for moving the agents and closing (Restarting frames, close handshakes),
 * at most half the grace: the wait for in-flight hub streams ends this long before the grace does.
 */
export const DRAIN_CLOSE_RESERVE_MS = 2_000;
/**
 * drain(): the port stays open, answering /readyz with 503, at least this long (within the grace), so a load
 * balancer that checks every second or faster sees the relay leave before its port closes.
 */
export const DRAIN_READINESS_MS = 1_000;
/**
 * drain(): after the agents moved, the relay keeps serving until no request other than a health check has
 * arrived for this long (the balancer stopped sending), at most until DRAIN_QUIET_RESERVE_MS before the grace ends.
 */
export const DRAIN_QUIET_MS = 1_000;
export const DRAIN_QUIET_RESERVE_MS = 500;
/** Paths that do not count as traffic for the drain's quiet wait (probes and scrapes). */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
/** Failed registrations: after 10 from one source within 5 minutes its further failures get 429 (valid credentials pass). */
export const REGISTER_FAILURES = { max: 10, windowMs: 5 * 60_000, maxEntries: 10_000 } as const;

export interface StartOptions {
  clock?: Clock;
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  /** A store to use instead of the one the config names (tests). */
  store?: Store;
  /** Extra plugins (data plane: /derp, proxies) registered before the server listens. */
  plugins?: Array<(app: FastifyInstance, relay: RelayContext) => Promise<void>>;
}

export interface RunningRelay {
  /** https://host:port the server is bound to (http:// with plain-http). */
  url: string;
  /** URL given to agents (config publicUrl, or `url`). */
  publicUrl: string;
  /**
   * Pin and PEM clients are told to trust: the relay's own certificate, or with plain-http the
   * --public-ca-file certificate(s). Empty strings only with plain-http and no --public-ca-file
   * (clients use their system trust store).
   */
  caPin: string;
  caPem: string;
  /** True when the relay serves plain HTTP behind a TLS terminator. */
  plainHttp: boolean;
  /** The first admin access key: only on the start that created it. */
  adminKey?: string;
  /** Base64 WireGuard public key of the hub node. */
  hubPublicKey: string;
  /** The hub node's WireGuard private key (32 bytes), for the data plane. */
  hubPrivateKey: Buffer;
  fastify: FastifyInstance;
  httpsServer: HttpsServer;
  store: Store;
  hooks: RelayHooks;
  log: Logger;
  context: RelayContext;
  /** The STUN responder on UDP (`--stun-port`), or null when it is off. */
  stun: StunResponder | null;
  close(): Promise<void>;
  /**
   * SIGTERM (relay/drain.ts): /readyz fails at once and no new agent is admitted; after DRAIN_READINESS_MS,
   * once the hub has no stream in flight (or the grace less DRAIN_CLOSE_RESERVE_MS ran out), the agents get the
   * Restarting frame; requests are served until DRAIN_QUIET_MS pass without one, then the relay closes, cutting
   * connections still open when `graceMs` ends. Resolves when closed.
   */
  drain(graceMs: number): Promise<void>;
}

export interface OpenStoreOptions {
  /** A SQLite file whose mode had to be narrowed (default: a warning on stderr). */
  onModeFixed?: OnModeFixed;
  /** PostgreSQL connection trouble after the start (default: a line on stderr). */
  onStoreError?: (message: string) => void;
  /** PostgreSQL: refuse a database without a relay store instead of creating one (offline tools). */
  existingOnly?: boolean;
}

/**
 * Opens the configured store: SQLite (file prepared 0600 first) or PostgreSQL (connects and migrates;
 * BAD_CONFIG naming the server when it cannot).
 */
export async function openStore(config: RelayConfig, opts: OpenStoreOptions = {}): Promise<Store> {
  const onModeFixed = opts.onModeFixed ?? warnOnStderr;
  if (config.store.kind === 'postgres') {
    const pgConfig = config.store;
    return PostgresStore.open({
      connection: { target: pgConfig.target, password: pgConfig.password?.reveal() ?? null, ca: pgConfig.ca },
      poolSize: pgConfig.poolSize,
      onError: opts.onStoreError ?? ((m) => process.stderr.write(`${m}\n`)),
      existingOnly: opts.existingOnly ?? false,
    });
  }
  try {
    prepareDbFile(config.store.path, onModeFixed);
    return new SqliteStore(config.store.path);
  } catch (err) {
    if (isTunnelError(err)) throw err;
    const reason = (err as { code?: string }).code ?? (err as Error).message;
    throw new TunnelError('BAD_CONFIG', `store: cannot open sqlite:${config.store.path} (${reason})`);
  }
}

/** True if the certificate's SANs cover the URL's host name or address. */
export function certCovers(certDer: Buffer, url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const x = new X509Certificate(certDer);
  return (isIP(host) ? x.checkIP(host) : x.checkHost(host)) !== undefined;
}

/** File-system failures while preparing the data dir become BAD_CONFIG naming the key and the errno. */
function onDisk<T>(key: string, path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (isTunnelError(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new TunnelError('BAD_CONFIG', `${key}: cannot prepare ${path} (${code})`);
  }
}

function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return h.includes(':') ? `[${h}]` : h;
}

/** Maps Fastify's own errors (validation, body limit, media type) to the project's codes. */
function mapError(err: FastifyError): TunnelError {
  if (isTunnelError(err)) return err;
  if (err.validation && err.validation.length > 0) {
    const v = err.validation[0]!;
    const where = `${err.validationContext ?? 'body'}${v.instancePath ? v.instancePath.replace(/\//g, '.') : ''}`;
    const params = v.params as Record<string, unknown>;
    if (typeof params.additionalProperty === 'string') {
      return new TunnelError('BAD_INPUT', `${where}.${params.additionalProperty}: unknown field`);
    }
    if (typeof params.missingProperty === 'string') {
      return new TunnelError('BAD_INPUT', `${where}.${params.missingProperty}: required`);
    }
    return new TunnelError('BAD_INPUT', `${where}: ${v.message ?? 'invalid'}`);
  }
  const byCode: Record<string, [ErrorCode, string]> = {
    FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', `request body is over the ${BODY_LIMIT}-byte limit`],
    FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'],
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_INPUT', 'Content-Length does not match the body'],
  };
  const mapped = err.code ? byCode[err.code] : undefined;
  if (mapped) return new TunnelError(mapped[0], mapped[1]);
  if (err.statusCode === 413)
    return new TunnelError('PAYLOAD_TOO_LARGE', `request body is over the ${BODY_LIMIT}-byte limit`);
  if (err.statusCode === 415)
    return new TunnelError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
    return new TunnelError('BAD_INPUT', `body: ${redactSecrets(err.message)}`);
  }
  return new TunnelError('INTERNAL', 'internal error');
}

/** The configured HTTP limits, with the total connection cap derived from the open-file limit when not set. */
export function httpLimitsOf(config: RelayConfig, openFileLimit: number | null): HttpLimits {
  return {
    ...config.http,
    maxConnections: config.http.maxConnections ?? defaultMaxConnections(openFileLimit),
  };
}

/** The STUN responder `--stun-port` asks for, or null when it is off; BAD_CONFIG when it cannot bind. */
function openStun(config: RelayConfig, clock: Clock): Promise<StunResponder | null> {
  if (config.stunPort === null) return Promise.resolve(null);
  return startStunResponder({ host: config.listen.host, port: config.stunPort, clock });
}

function errnoOf(err: unknown): string {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : 'error';
}

/** Sends `e` as the error envelope with its status. */
function sendError(reply: FastifyReply, e: TunnelError): void {
  reply.code(e.status).send(e.toJSON());
}

export async function startRelay(config: RelayConfig, opts: StartOptions = {}): Promise<RunningRelay> {
  const clock = opts.clock ?? realClock;
  const log = createLogger(config.logLevel, opts.logStream);
  const onModeFixed: OnModeFixed = (fix) =>
    log.warn({ code: 'INSECURE_FILE_MODE', file: fix.file, oldMode: fix.oldMode }, fix.message);
  // Settings and ports before anything is written or issued (port-hold.ts): a bad file or a taken port fails the
  // start with the data dir as it was, so the next start still issues the admin key.
  const publicCa = config.publicCaFile ? loadPublicCa(config.publicCaFile) : null;
  const undo = new UndoStack();
  const heldListen = await holdListenPort(config.listen.host, config.listen.port);
  undo.push(() => heldListen.release());
  const udp = await undo.guard(() => openHubUdp(config));
  undo.push(async () => udp?.close());
  const stun = await undo.guard(() => openStun(config, clock));
  undo.push(async () => stun?.close());
  // With plain-http the relay has no certificate of its own: clients see the terminator's.
  const tls: TlsIdentity | null = await undo.guard(async () =>
    onDisk('data-dir', config.dataDir, () => {
      if (config.plainHttp) return null;
      // A given --tls-cert/--tls-key is read before the data dir is made.
      if (config.tlsCert && config.tlsKey) return loadOrCreateTls(config, clock.wallNow(), onModeFixed);
      ensureDataDir(config.dataDir);
      return loadOrCreateTls(config, clock.wallNow(), onModeFixed);
    }),
  );
  // Agents compare --ca-pin with the certificate the server presents (no chain walk), so a pin of
  // --public-ca-file is only printed when its first certificate is the one the terminator serves (it names the
  // public host). Otherwise join commands carry no pin and agents trust the CA through --ca-file or the system
  // store; kubeconfigs carry the whole file either way (kubectl validates the chain).
  const servedByTerminator =
    publicCa !== null && config.publicUrl !== null && certCovers(publicCa.firstDer, config.publicUrl);
  const trust = tls
    ? { pin: tls.caPin, pem: tls.certPem }
    : { pin: servedByTerminator ? publicCa.pin : null, pem: publicCa?.pem ?? null };
  const hub = await undo.guard(async () =>
    onDisk('data-dir', config.dataDir, () => {
      ensureDataDir(config.dataDir);
      return loadHubKey(config, onModeFixed);
    }),
  );
  const store =
    opts.store ??
    (await undo.guard(() =>
      openStore(config, {
        onModeFixed,
        onStoreError: (message) => log.warn({ code: 'STORE_CONNECTION' }, message),
      }),
    ));
  undo.push(() => store.close());
  if (config.store.kind === 'postgres')
    log.info({ store: describeTarget(config.store.target) }, 'store: PostgreSQL');
  const reservedKeys = new ReservedKeys([hub.publicKey]);
  const fleet: FleetStart = {
    store,
    storeConfig: config.store,
    mesh: config.mesh,
    hubPublicKey: hub.publicKey,
    caPin: trust.pin,
    reservedKeys,
  };
  await undo.guard(() => checkFleet(fleet));
  const hooks = new RelayHooks(store);
  let boundUrl = '';
  const ctx: RelayContext = {
    store,
    clock,
    config,
    hooks,
    log,
    metrics: new Metrics(),
    limiter: {
      bySource:
        store instanceof PostgresStore
          ? store.failureLimits(clock, REGISTER_FAILURES)
          : localFailureLimits(new FailureLimiter(clock, REGISTER_FAILURES)),
    },
    hubPublicKey: hub.publicKey,
    reservedKeys,
    mesh: meshNodeOf(fleet, hooks, log),
    caPin: trust.pin,
    caPem: trust.pem,
    publicUrl: () => config.publicUrl ?? boundUrl,
    drain: new DrainState(clock),
    udp,
  };

  const openFileLimit = readOpenFileLimit();
  const limits = httpLimitsOf(config, openFileLimit);
  const guard = new ConnectionGuard({ limits, log: log.child({ component: 'http' }) });
  const serverLimits = nodeServerLimits(limits);
  const app = Fastify({
    ...(tls
      ? {
          https: {
            cert: tls.certPem,
            key: tls.keyPem,
            handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
            ...serverLimits,
          },
        }
      : { http: serverLimits }),
    loggerInstance: log,
    // Per-request lines at debug, not info.
    logController: new DebugRequestLog(),
    bodyLimit: BODY_LIMIT,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // The onRequest check answers requests during close with the error envelope (503 CLOSED).
    return503OnClosing: false,
    keepAliveTimeout: limits.idleTimeoutMs,
    requestTimeout: 0,
    forceCloseConnections: 'idle',
    clientErrorHandler: (err, socket) => guard.handleClientError(err, socket),
    frameworkErrors: (err, req, reply) => sendError(reply, frameworkErrorReply(err.code, req.raw.url ?? '')),
  }).withTypeProvider<TypeBoxTypeProvider>();
  const detachGuard = guard.attach(app.server);
  app.server.on('checkExpectation', answerExpectation);
  ctx.metrics.addCollector(() => httpConnectionFamilies(guard));

  // Only JSON bodies are parsed (text/plain and the rest get 415); empty JSON bodies count as {} so body-less
  // POSTs (accept, deny) work with or without a Content-Type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new TunnelError('BAD_INPUT', 'body: not valid JSON'), undefined);
    }
  });

  // A POST without a body (accept, deny, rotate-psk without options) is validated as {}.
  app.addHook('preValidation', async (req) => {
    if (req.method === 'POST' && req.body === undefined) req.body = {};
  });

  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const e = mapError(err);
    if (e.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    else if (e.code === 'UNAUTHENTICATED' || e.code === 'BOOTSTRAP_REJECTED') ctx.metrics.authFailures.inc();
    reply.code(e.status).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new TunnelError('NOT_FOUND', `no route ${req.method} ${redactUrl(req.url).split('?')[0]}`);
    reply.code(404).send(e.toJSON());
  });
  // While closing, answers carry `Connection: close` so keep-alive sockets end after their last
  // in-flight response instead of holding close() open, and new requests get 503 CLOSED.
  let shuttingDown = false;
  addRequestChecks(app as unknown as FastifyInstance, () => shuttingDown);
  app.addHook('onSend', async (_req, reply, payload) => {
    if (shuttingDown) reply.header('connection', 'close');
    return payload;
  });
  app.addHook('onResponse', async (req, reply) => {
    ctx.metrics.requests.inc({ route: req.routeOptions.url ?? 'unmatched', code: String(reply.statusCode) });
  });
  noteTraffic(app as unknown as FastifyInstance, ctx.drain);
  // Moving the agents: other replicas forget them here first, then the data plane sends them away.
  ctx.drain.onMove(() => ctx.mesh?.stop());

  try {
    await app.register(healthRoutes, { ctx });
    await app.register(networkRoutes, { ctx });
    await app.register(clusterRoutes, { ctx });
    await app.register(eventsRoutes, { ctx });
    await app.register(kubeconfigRoutes, { ctx });
    await app.register(registerRoutes, { ctx });
    await app.register(tokenRoutes, { ctx });
    await app.register(valuesRoutes, { ctx });
    await app.register(auditRoutes, { ctx });
    await app.register(rateLimitRoutes, { ctx });
    await app.register(whoamiRoutes, { ctx });
    await app.register(consoleRoutes, { ctx });
    for (const plugin of opts.plugins ?? []) await plugin(app as unknown as FastifyInstance, ctx);
    await app.ready();
  } catch (err) {
    // A failing plugin (data plane) must not leave the store open.
    await app.close().catch(() => undefined);
    return undo.abort(err);
  }
  await heldListen.release();
  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    await app.close();
    return undo.abort(listenBindError(config.listen.host, config.listen.port, errnoOf(err)));
  }
  // Issued only once every port is bound: a start that fails before this leaves the next one to issue it.
  let adminKey: string | null;
  try {
    adminKey = await ensureAdminKey(store, clock.wallNow());
    if (adminKey === null) await warnIfNoAdminKey(store, clock.wallNow(), log, adminKeyRecovery(config));
  } catch (err) {
    await app.close();
    return undo.abort(err);
  }
  if (stun !== null) {
    const responder = stun;
    ctx.metrics.addCollector(() => stunFamilies(responder.stats));
    log.info({ host: config.listen.host, port: stun.port }, 'STUN responder listening (udp)');
  }
  const addr = app.server.address() as AddressInfo;
  boundUrl = `${tls ? 'https' : 'http'}://${urlHost(config.listen.host)}:${addr.port}`;
  try {
    await ctx.mesh?.start(boundUrl);
  } catch (err) {
    await app.close();
    return undo.abort(err);
  }
  log.info(
    {
      url: boundUrl,
      publicUrl: ctx.publicUrl(),
      caPin: trust.pin,
      plainHttp: config.plainHttp,
      wireguardCipher: defaultAead().name,
      http: limits,
    },
    'relay listening',
  );
  const overFiles = openFilesWarning(limits.maxConnections, openFileLimit);
  if (overFiles !== null) log.warn({ maxConnections: limits.maxConnections, openFileLimit }, overFiles);
  if (tls && !certCovers(tls.certDer, ctx.publicUrl())) {
    log.warn(
      { publicUrl: ctx.publicUrl() },
      'the TLS certificate does not name the public URL host: agents that check names will refuse it; ' +
        'remove <data-dir>/tls to regenerate the self-signed one, or pass --tls-cert/--tls-key',
    );
  }

  if (publicCa && !certCovers(publicCa.firstDer, ctx.publicUrl())) {
    // Agents compare --ca-pin with the certificate the terminator presents (no chain walk).
    log.warn(
      { publicUrl: ctx.publicUrl() },
      'the first certificate of --public-ca-file does not name the public URL host, so it is not the one the ' +
        'terminator serves: join commands carry no --ca-pin; join agents with --ca-file (this file) instead',
    );
  }

  let closing: Promise<void> | null = null;
  /** Closes; connections still open after `forceAfterMs` are cut. */
  const closeWithin = (forceAfterMs: number): Promise<void> => {
    closing ??= (async () => {
      shuttingDown = true;
      // Other replicas stop sending requests here; the agents' locations held here are cleared.
      await ctx.mesh?.stop();
      await stun?.close();
      // Stop accepting, wait for in-flight requests; sockets still open after the grace are cut.
      const force = setTimeout(() => app.server.closeAllConnections(), forceAfterMs);
      force.unref();
      await app.close();
      clearTimeout(force);
      detachGuard();
      await udp?.close();
      await store.close();
      hooks.removeAllListeners();
    })();
    return closing;
  };
  const relay: RunningRelay = {
    url: boundUrl,
    publicUrl: ctx.publicUrl(),
    caPin: trust.pin ?? '',
    caPem: trust.pem ?? '',
    plainHttp: config.plainHttp,
    hubPublicKey: keyToBase64(hub.publicKey),
    hubPrivateKey: hub.privateKey,
    fastify: app as unknown as FastifyInstance,
    httpsServer: app.server as HttpsServer,
    store,
    hooks,
    log,
    context: ctx,
    stun,
    close: () => closeWithin(CLOSE_GRACE_MS),
    drain: (graceMs) => drainRelay({ ctx, graceMs, closeWithin }),
  };
  if (adminKey !== null) relay.adminKey = adminKey;
  return relay;
}

interface DrainInput {
  ctx: RelayContext;
  graceMs: number;
  closeWithin: (forceAfterMs: number) => Promise<void>;
}

/**
 * Requests other than health checks count as traffic for the drain's quiet wait (CONNECTs and Upgrades are
 * counted by the hub's proxy plugin, which owns those events).
 */
function noteTraffic(app: FastifyInstance, drain: DrainState): void {
  app.addHook('onRequest', async (req) => {
    if (!PROBE_PATHS.has((req.raw.url ?? '').split('?', 1)[0] ?? '')) drain.noteActivity();
  });
}

/** RunningRelay.drain: see its comment. */
async function drainRelay({ ctx, graceMs, closeWithin }: DrainInput): Promise<void> {
  const started = ctx.clock.now();
  const left = () => graceMs - (ctx.clock.now() - started);
  if (ctx.drain.start()) {
    ctx.log.info(
      { graceMs, inFlight: ctx.drain.inFlight() },
      'draining: readiness fails, no new agents; waiting for in-flight hub requests',
    );
    const reserve = Math.min(DRAIN_CLOSE_RESERVE_MS, graceMs / 2);
    const cut = await ctx.drain.whenIdle({ timeoutMs: graceMs - reserve, notBeforeMs: DRAIN_READINESS_MS });
    if (Object.keys(cut).length > 0)
      ctx.log.warn({ inFlight: cut }, 'draining: grace ran out with hub requests in flight; cutting them');
    ctx.log.info({ agents: ctx.hooks.connectedCount }, 'draining: moving agents (Restarting)');
    await ctx.drain.moveAgents();
    const quiet = await ctx.drain.whenQuiet({
      quietMs: DRAIN_QUIET_MS,
      timeoutMs: Math.max(0, left() - DRAIN_QUIET_RESERVE_MS),
    });
    ctx.log.info({ quiet }, 'draining: closing');
  }
  await closeWithin(Math.max(0, left()));
}
