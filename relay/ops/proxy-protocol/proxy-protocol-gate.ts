/**
 * `serve --proxy-protocol CIDR,...`: connections from those peers (the load balancers) must start with a PROXY
 * header (proxy-header.ts, version 1 or 2). The gate takes the server's 'connection' listeners (the TLS layer's,
 * the connection guard's) and hands each connection on to them only once its header is read: the client it
 * names is recorded for the connection (proxied-sources.ts, read through relay/ops/http/source-address.ts peerAddress) and
 * the bytes after the header are put back for TLS. A trusted peer whose header is missing, malformed, over its
 * cap or not complete within `timeoutMs` is closed and counted by reason. Connections from other peers go on at
 * once with no byte read: a PROXY header from them is not believed (it fails TLS like any other garbage).
 */
import type { BlockList, Server, Socket } from 'node:net';
import type { Logger } from 'pino';
import { type Clock, realClock } from '../../../shared/clock.js';
import { recordProxiedClient } from './proxied-sources.js';
import { type ProxyHeaderFailure, ProxyHeaderParser } from './proxy-header.js';

export type ProxyRefusal = ProxyHeaderFailure | 'timeout';

export interface ProxyProtocolStats {
  /** Headers read, by version. */
  readonly accepted: { v1: number; v2: number };
  /** Trusted connections closed, by reason. */
  readonly refused: Record<ProxyRefusal, number>;
}

export interface ProxyProtocolGateOptions {
  /** Peers that must send the header (`--proxy-protocol`). */
  trusted: BlockList;
  /** The header must be complete this long after the connection is accepted. */
  timeoutMs: number;
  log: Pick<Logger, 'warn'>;
  clock?: Clock;
}

/** A refusal is logged at most once per this long per reason (all are counted). */
const WARN_EVERY_MS = 60_000;

type ConnectionListener = (socket: Socket) => void;

function familyOf(address: string): 'ipv4' | 'ipv6' {
  return address.includes(':') ? 'ipv6' : 'ipv4';
}

export class ProxyProtocolGate {
  readonly stats: ProxyProtocolStats = {
    accepted: { v1: 0, v2: 0 },
    refused: { missing: 0, malformed: 0, too_long: 0, timeout: 0 },
  };
  readonly #trusted: BlockList;
  readonly #timeoutMs: number;
  readonly #log: Pick<Logger, 'warn'>;
  readonly #clock: Clock;
  /** Trusted connections whose header is still being read. */
  readonly #reading = new Set<Socket>();
  readonly #lastWarn = new Map<ProxyRefusal, number>();

  constructor(options: ProxyProtocolGateOptions) {
    this.#trusted = options.trusted;
    this.#timeoutMs = options.timeoutMs;
    this.#log = options.log;
    this.#clock = options.clock ?? realClock;
  }

  /** Connections whose header is still being read. */
  get reading(): number {
    return this.#reading.size;
  }

  /**
   * Puts the gate in front of the 'connection' listeners `server` has now (attach it once every listener that
   * must see the client's address is on).
   */
  attach(server: Server): void {
    const listeners = server.rawListeners('connection');
    const handOn: ConnectionListener = (socket) => {
      for (const listener of listeners) Reflect.apply(listener, server, [socket]);
    };
    const onConnection: ConnectionListener = (socket) => {
      const address = socket.remoteAddress;
      if (address !== undefined && this.#trusted.check(address, familyOf(address))) {
        this.#readHeader(socket, handOn);
      } else {
        handOn(socket);
      }
    };
    server.removeAllListeners('connection');
    server.on('connection', onConnection);
  }

  /** Closes the connections still sending their header (the relay is closing). */
  close(): void {
    for (const socket of this.#reading) socket.destroy();
    this.#reading.clear();
  }

  #readHeader(socket: Socket, handOn: ConnectionListener): void {
    const parser = new ProxyHeaderParser();
    const timer = this.#clock.setTimer(this.#timeoutMs, () => {
      stop();
      this.#refuse(socket, 'timeout', `no complete PROXY header within ${this.#timeoutMs} ms`);
    });
    const onReadable = (): void => {
      for (let chunk: unknown = socket.read(); Buffer.isBuffer(chunk); chunk = socket.read()) {
        const step = parser.push(chunk);
        if (step.kind === 'more') continue;
        stop();
        if (step.kind === 'failed') {
          this.#refuse(socket, step.reason, step.detail);
          return;
        }
        if (step.rest.length > 0) socket.unshift(step.rest);
        if (step.header.client !== null) recordProxiedClient(socket, step.header.client);
        this.stats.accepted[step.header.version === 1 ? 'v1' : 'v2']++;
        handOn(socket);
        return;
      }
    };
    // A peer that resets before its header is gone: nothing to hand on, nothing to count.
    const onGone = (): void => {
      stop();
      socket.destroy();
    };
    const stop = (): void => {
      this.#clock.clearTimer(timer);
      socket.off('readable', onReadable);
      socket.off('error', onGone);
      socket.off('close', onGone);
      this.#reading.delete(socket);
    };
    this.#reading.add(socket);
    socket.on('readable', onReadable);
    socket.on('error', onGone);
    socket.on('close', onGone);
  }

  #refuse(socket: Socket, reason: ProxyRefusal, detail: string): void {
    this.stats.refused[reason]++;
    socket.destroy();
    const now = this.#clock.now();
    if (now - (this.#lastWarn.get(reason) ?? -WARN_EVERY_MS) < WARN_EVERY_MS) return;
    this.#lastWarn.set(reason, now);
    this.#log.warn(
      { reason, peer: socket.remoteAddress, refused: this.stats.refused[reason] },
      `closed a connection from a --proxy-protocol peer: ${detail} (further ones within a minute are only counted)`,
    );
  }
}
