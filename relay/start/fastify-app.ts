/**
 * The Fastify server of a relay process (either mode) on its one port: TLS with the relay's certificate (or plain
 * HTTP behind a terminator), the connection guard and limits, JSON-only bodies, the error envelope for every
 * failure, `Cache-Control: no-store` on every API answer, and while closing `Connection: close` on answers and
 * 503 CLOSED for new requests.
 */

import { Server as TlsServer } from 'node:tls';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
} from 'fastify';
import type { Logger } from 'pino';
import { realClock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import type { DrainState } from '../fleet/drain.js';
import type { RelayConfig } from '../ops/config/config.js';
import { type TrustedCidr, trustedPeers } from '../ops/config/config-proxy-protocol.js';
import { defaultMaxConnections, type HttpLimits } from '../ops/config/http-limits.js';
import type { MeshKey } from '../ops/config/mesh-settings.js';
import { ConnectionGuard } from '../ops/http/connection-guard.js';
import { answerExpectation, frameworkErrorReply } from '../ops/http/error-replies.js';
import { httpConnectionFamilies } from '../ops/http/http-metrics.js';
import { answerPlainHttp } from '../ops/http/plain-http-hint.js';
import { DebugRequestLog } from '../ops/http/request-log-controller.js';
import { addRequestChecks, nodeServerLimits } from '../ops/http/server-options.js';
import { redactUrl } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { ProxyProtocolGate } from '../ops/proxy-protocol/proxy-protocol-gate.js';
import { proxyProtocolFamilies } from '../ops/proxy-protocol/proxy-protocol-metrics.js';
import { rotateFleetTicketKeys } from '../ops/tls/ticket-keys.js';
import type { TlsIdentity } from './identity.js';
import { BODY_LIMIT, NO_STORE_PREFIXES, PROBE_PATHS, TLS_HANDSHAKE_TIMEOUT_MS } from './limits.js';
import { mapError } from './map-error.js';

/** The configured HTTP limits, with the total connection cap derived from the open-file limit when not set. */
export function httpLimitsOf(config: RelayConfig, openFileLimit: number | null): HttpLimits {
  return {
    ...config.http,
    maxConnections: config.http.maxConnections ?? defaultMaxConnections(openFileLimit),
  };
}

export interface AppOptions {
  tls: TlsIdentity | null;
  limits: HttpLimits;
  log: Logger;
  metrics: Metrics;
  drain: DrainState;
  /** `--proxy-protocol` peers; empty: no PROXY header is read. */
  proxyProtocol: readonly TrustedCidr[];
  /**
   * The fleet's mesh key: TLS session tickets are then sealed with keys derived from it, so a ticket resumes on
   * every replica (ticket-keys.ts); null: Node's random per-process ticket keys.
   */
  ticketSecret?: MeshKey | null;
}

/** Set once the relay starts closing (never unset). */
export class ClosingFlag {
  #closing = false;

  get closing(): boolean {
    return this.#closing;
  }

  set(): void {
    this.#closing = true;
  }
}

export interface RelayApp {
  app: FastifyInstance;
  guard: ConnectionGuard;
  detachGuard(): void;
  closing: ClosingFlag;
}

function sendError(reply: FastifyReply, e: TunnelError): void {
  reply.code(e.status).send(e.toJSON());
}

function createFastify(o: AppOptions, guard: ConnectionGuard): FastifyInstance {
  const serverLimits = nodeServerLimits(o.limits);
  // Fastify's own logger type, so the instance is the plain FastifyInstance every route module takes.
  const loggerInstance: FastifyBaseLogger = o.log;
  return Fastify({
    ...(o.tls
      ? {
          https: {
            cert: o.tls.certPem,
            key: o.tls.keyPem,
            handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
            ...serverLimits,
          },
        }
      : { http: serverLimits }),
    loggerInstance,
    // Per-request lines at debug, not info.
    logController: new DebugRequestLog(),
    bodyLimit: BODY_LIMIT,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // The onRequest check answers requests during close with the error envelope (503 CLOSED).
    return503OnClosing: false,
    keepAliveTimeout: o.limits.idleTimeoutMs,
    requestTimeout: 0,
    forceCloseConnections: 'idle',
    clientErrorHandler: (err, socket) => guard.handleClientError(err, socket),
    frameworkErrors: (err, req, reply) => sendError(reply, frameworkErrorReply(err.code, req.raw.url ?? '')),
  });
}

/** Only JSON bodies are parsed (others get 415); an empty body counts as {} so body-less POSTs work. */
function jsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body).trim();
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
}

function errorReplies(app: FastifyInstance, metrics: Metrics): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = mapError(err);
    if (e.code === 'INTERNAL') req.log.error({ err }, 'request failed');
    else if (e.code === 'UNAUTHENTICATED' || e.code === 'BOOTSTRAP_REJECTED') metrics.authFailures.inc();
    reply.code(e.status).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new TunnelError('NOT_FOUND', `no route ${req.method} ${redactUrl(req.url).split('?')[0]}`);
    reply.code(404).send(e.toJSON());
  });
}

/**
 * With --proxy-protocol, trusted peers' connections reach the TLS layer and the connection guard only once their
 * PROXY header is read (within the TLS handshake timeout, or --header-timeout when shorter).
 */
function gateProxyProtocol(app: FastifyInstance, o: AppOptions): void {
  const gate = new ProxyProtocolGate({
    trusted: trustedPeers(o.proxyProtocol),
    timeoutMs: Math.min(o.limits.headerTimeoutMs, TLS_HANDSHAKE_TIMEOUT_MS),
    log: o.log.child({ component: 'proxy-protocol' }),
  });
  // Exported (as zeros) when off too, so dashboards need not know the flag.
  o.metrics.addCollector(() => proxyProtocolFamilies(gate));
  if (o.proxyProtocol.length === 0) return;
  gate.attach(app.server);
  app.addHook('preClose', async () => gate.close());
}

/** With a mesh key and TLS in the relay, every replica seals session tickets with the same keys. */
function shareTicketKeys(app: FastifyInstance, secret: MeshKey | null): void {
  if (secret === null || !(app.server instanceof TlsServer)) return;
  const stop = rotateFleetTicketKeys(app.server, secret.reveal(), realClock);
  app.addHook('onClose', async () => stop());
}

/** The relay's Fastify server, not yet listening. */
export function createRelayApp(o: AppOptions): RelayApp {
  const guard = new ConnectionGuard({ limits: o.limits, log: o.log.child({ component: 'http' }) });
  const app = createFastify(o, guard);
  const detachGuard = guard.attach(app.server);
  const stopHints = o.tls ? answerPlainHttp(app.server) : () => undefined;
  gateProxyProtocol(app, o);
  shareTicketKeys(app, o.ticketSecret ?? null);
  app.server.on('checkExpectation', answerExpectation);
  o.metrics.addCollector(() => httpConnectionFamilies(guard));
  jsonBodies(app);
  errorReplies(app, o.metrics);
  // While closing, answers carry `Connection: close` so keep-alive sockets end after their last
  // in-flight response instead of holding close() open, and new requests get 503 CLOSED.
  const closing = new ClosingFlag();
  addRequestChecks(app, () => closing.closing);
  app.addHook('onSend', async (req, reply, payload) => {
    if (closing.closing) reply.header('connection', 'close');
    if (NO_STORE_PREFIXES.some((prefix) => req.url.startsWith(prefix)))
      reply.header('cache-control', 'no-store');
    return payload;
  });
  app.addHook('onResponse', async (req, reply) => {
    o.metrics.requests.inc({ route: req.routeOptions.url ?? 'unmatched', code: String(reply.statusCode) });
  });
  // Requests other than health checks count as traffic for the drain's quiet wait (CONNECTs and Upgrades are
  // counted by whoever answers those events).
  app.addHook('onRequest', async (req) => {
    if (!PROBE_PATHS.has((req.raw.url ?? '').split('?', 1)[0] ?? '')) o.drain.noteActivity();
  });
  return {
    app,
    guard,
    detachGuard: () => {
      stopHints();
      detachGuard();
    },
    closing,
  };
}
