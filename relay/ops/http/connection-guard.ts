/**
 * Cuts HTTP connections that hold the relay without using it, and counts and logs every cut:
 *   - total and per-source caps when a TCP connection is accepted (connection-table.ts);
 *   - the request-head timeout: Node's `headersTimeout`, answered here through 'clientError' (408);
 *   - the body timeout: a request body not received within `bodyTimeoutMs` after its headers (408), unless the
 *     relay is already streaming the answer (a path-proxy request whose upstream answered);
 *   - the idle timeout: Node's `keepAliveTimeout`, observed here through the server's 'timeout' event;
 *   - TLS handshakes cut by the TLS layer (counted only).
 * A connection that finishes a request or upgrades (/derp, CONNECT, path-proxy Upgrade) is settled: it no longer
 * counts against its source, and no timeout here applies to an upgraded socket.
 */
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, realClock, type TimerHandle } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import type { HttpLimits } from '../config/http-limits.js';
import { ConnectionTable, type TrackedConnection } from './connection-table.js';
import { CutLog, type CutLogger, type CutReason, zeroCutCounts } from './cut-log.js';
import { clientErrorReply, replyAndClose } from './error-replies.js';
import { peerAddress, sourceKey } from './source-address.js';
import { observeUpgrades } from './upgrade-observer.js';

export interface ConnectionGuardOptions {
  limits: HttpLimits;
  log: CutLogger;
  clock?: Clock;
}

export interface ConnectionGuardStats {
  /** Connections cut, by reason. */
  readonly cut: Record<CutReason, number>;
}

export class ConnectionGuard {
  readonly limits: HttpLimits;
  readonly stats: ConnectionGuardStats;
  readonly #table: ConnectionTable;
  readonly #clock: Clock;
  readonly #cutLog: CutLog;

  constructor(opts: ConnectionGuardOptions) {
    this.limits = opts.limits;
    this.#clock = opts.clock ?? realClock;
    this.#table = new ConnectionTable(opts.limits);
    this.#cutLog = new CutLog({ log: opts.log, clock: this.#clock });
    this.stats = { cut: zeroCutCounts() };
  }

  /** Connections held, and of them the ones still pending. */
  get open(): { total: number; pending: number } {
    return { total: this.#table.size, pending: this.#table.pendingCount };
  }

  /** Watches `server`; returns a function that stops watching. */
  attach(server: HttpServer | HttpsServer): () => void {
    const onConnection = (socket: Socket): void => this.#onConnection(socket);
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => this.#onRequest(req, res);
    const onIdle = (socket: Duplex): void => this.#cutIdle(socket);
    const onTlsError = (err: NodeJS.ErrnoException): void => {
      if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') this.#count('tls_handshake_timeout', null);
    };
    server.on('connection', onConnection);
    server.on('request', onRequest);
    server.on('timeout', onIdle);
    server.on('tlsClientError', onTlsError);
    const stopObserving = observeUpgrades(server, (socket) => this.#settle(socket));
    return () => {
      server.off('connection', onConnection);
      server.off('request', onRequest);
      server.off('timeout', onIdle);
      server.off('tlsClientError', onTlsError);
      stopObserving();
      this.#cutLog.close();
    };
  }

  /** The server's 'clientError' handler: answers parser errors and head timeouts with the error envelope. */
  handleClientError(err: Error & { code?: string; reason?: string }, socket: Duplex): void {
    const reply = clientErrorReply(err, this.limits.headerTimeoutMs);
    if (reply === null || socket.destroyed) {
      socket.destroy();
      return;
    }
    const c = this.#table.find(socket);
    this.#count(reply.reason, c?.source ?? null);
    // Bytes of an answer already under way must not be followed by a second status line.
    if (c !== undefined && [...c.responses].some((r) => r.headersSent)) socket.destroy();
    else replyAndClose(socket, reply.error, this.#clock);
  }

  #onConnection(socket: Socket): void {
    const address = peerAddress(socket);
    const admission = address === undefined ? null : this.#table.admit(socket, sourceKey(address));
    if (admission === null || admission.kind === 'gone') {
      socket.destroy();
      return;
    }
    if (admission.kind === 'refused') {
      this.#count(admission.reason, admission.source);
      socket.destroy();
      return;
    }
    const { connection, evicted } = admission;
    if (evicted) {
      this.#count('evicted', evicted.source);
      evicted.socket.destroy();
    }
    socket.once('close', () => this.#table.remove(connection));
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const c = this.#table.find(req.socket);
    if (c === undefined) return;
    c.responses.add(res);
    res.once('close', () => {
      c.responses.delete(res);
      if (req.complete) this.#table.settle(c);
    });
    req.once('end', () => this.#table.settle(c));
    this.#watchBody(req, res, c);
  }

  /** Cuts the connection when the body has not fully arrived `bodyTimeoutMs` after the headers. */
  #watchBody(req: IncomingMessage, res: ServerResponse, c: TrackedConnection): void {
    const arm = (): TimerHandle => this.#clock.setTimer(this.limits.bodyTimeoutMs, check);
    const check = (): void => {
      if (req.complete || c.socket.destroyed) return;
      // The relay is streaming the answer while the client still sends (path proxy): not a slow request.
      if (res.headersSent && !res.writableFinished) {
        watch.timer = arm();
        return;
      }
      this.#count('body_timeout', c.source);
      const s = this.limits.bodyTimeoutMs / 1000;
      const err = new TunnelError('REQUEST_TIMEOUT', `request body not received within ${s} s`);
      if (res.headersSent) req.socket.destroy();
      else replyAndClose(req.socket, err, this.#clock);
    };
    const watch = { timer: arm() };
    req.once('end', () => this.#clock.clearTimer(watch.timer));
  }

  #settle(socket: Duplex): void {
    const c = this.#table.find(socket);
    if (c) this.#table.settle(c);
  }

  /** Idle keep-alive closes are normal operation: counted, not logged. */
  #cutIdle(socket: Duplex): void {
    this.stats.cut.idle_timeout++;
    socket.destroy();
  }

  #count(reason: CutReason, source: string | null): void {
    this.stats.cut[reason]++;
    this.#cutLog.record(reason, source);
  }
}
