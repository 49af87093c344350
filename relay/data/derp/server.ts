/**
 * The DERP-like packet relay server: WebSocket (subprotocol `derp`) on any Node http/https server's
 * 'upgrade' event, admission and policy injected, routing by 32-byte key. The relay never decrypts
 * payloads: it sees WireGuard ciphertext and forwards it byte for byte.
 *
 * Routing rules (route()): the policy is asked first (a refused pair is dropped and counted as `policy`,
 * the sender is never told), then the destination key is looked up among registered clients (missing:
 * `unknown_dest`, with a rate-limited PeerGone(NotHere) back to the sender). A second connection with a key
 * already registered replaces the first (the old one is closed with 4003).
 */

import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { type Clock, realClock, type TimerHandle } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import type { KeyPair } from '../../../shared/keys.js';
import { SendSink } from '../../../shared/net/buffers/send-sink.js';
import { DerpCloseCode } from '../../../shared/net/derp/close-codes.js';
import { encodeRestarting, PeerGoneReason } from '../../../shared/net/derp/frames.js';
import type { DerpClientLike } from '../../../shared/net/derp/types.js';
import { replyAndClose } from '../../ops/http/error-replies.js';
import { peerAddress, sourceKey } from '../../ops/http/source-address.js';
import { type HandshakeSlot, HandshakeSlots } from './handshake-slots.js';
import { DEFAULT_DERP_LIMITS, type DerpLimits, restartWindowMs } from './limits.js';
import { type LocalClientHandlers, LocalPeer } from './local-peer.js';
import { type DerpStats, type DropReason, newStats, type RoutedPeer } from './peer.js';
import { WsPeer, type WsRouter } from './ws-peer.js';

export interface DerpAdmission {
  /** Checked once per connection, after the client proved its key. */
  isAdmitted(pubKey: Buffer): boolean | Promise<boolean>;
}

export interface DerpPolicy {
  /** Checked for every packet; must be fast and must not keep the Buffers (views into frames). */
  canSend(src: Buffer, dst: Buffer): boolean;
}

/** The subset of pino's logger the server uses. */
export interface DerpLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DerpServerOptions {
  /** The relay's Curve25519 key pair (ServerKey frame, ClientInfo sealing). */
  keyPair: KeyPair;
  admission: DerpAdmission;
  policy: DerpPolicy;
  clock?: Clock;
  limits?: Partial<DerpLimits>;
  logger?: DerpLogger;
  /** Test hook: every packet handed to a destination, before delivery (views: copy to keep). */
  onPacket?: (src: Buffer, dst: Buffer, payload: Buffer) => void;
  /** Require ClientInfo to echo the ServerKey challenge (default true; false admits plain DERP clients). */
  requireChallenge?: boolean;
  /** Upgrade path that attach() handles (default `/derp`). */
  path?: string;
  /** Keys closeClient never disconnects (the hub nodes'); the server's own key never is either. */
  reservedKeys?: { has(key: Buffer): boolean };
  /**
   * The client address an upgrade counts under for the per-source handshake cap (default: the connection's
   * peer; a hub replica behind the relay tier gives the address the tier names, relay/fleet/mesh/mesh-source.ts).
   */
  sourceOf?: (req: IncomingMessage) => string | undefined;
  /**
   * Checked first on every upgrade to `path`: an error refuses it with that error's envelope (a hub replica refuses a
   * bad `tunnel-mesh-key` header here, relay/fleet/mesh/mesh-screen.ts); null lets it through.
   */
  refusal?: (req: IncomingMessage) => TunnelError | null;
}

export interface AttachOptions {
  /** Upgrade requests for other paths (for example the hub's proxy with `Upgrade: SPDY/3.1`). */
  onOtherUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

export interface DerpServer {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * Handles upgrades on `path` from this server; returns a function that detaches again. Note: once any
   * 'upgrade' listener exists, Node hands every Upgrade request to 'upgrade' listeners and never to the
   * 'request' handler (Fastify routes). Other upgrade paths go to `onOtherUpgrade`; without it they get 404
   * while this is the server's only 'upgrade' listener.
   */
  attach(server: HttpServer | HttpsServer, opts?: AttachOptions): () => void;
  /** Closes the connection registered for this key (4004). False when none was, or the key is reserved. */
  closeClient(pubKey: Buffer, reason: string): boolean;
  isConnected(pubKey: Buffer): boolean;
  /** An in-process client (trusted: no admission check; the policy still applies). */
  connectLocal(keyPair: Pick<KeyPair, 'publicKey'>, handlers?: LocalClientHandlers): DerpClientLike;
  /** Refuses new upgrades (503 CLOSED) and keeps the connected clients (a relay that drains). */
  stopAdmitting(): void;
  /**
   * Sends Restarting to every client (reconnect within restartWindowMs of their count), closes them all,
   * refuses new upgrades (503 CLOSED until detached). Resolves when sockets closed.
   */
  shutdown(): Promise<void>;
  /** Live counters (the same object keeps updating). */
  readonly stats: Readonly<DerpStats>;
}

const NOOP = (): void => {};
const NOOP_LOGGER: DerpLogger = { debug: NOOP, info: NOOP, warn: NOOP, error: NOOP };

/** Answers an upgrade the relay does not take with the API's error envelope and closes the socket. */
function refuseUpgrade(socket: Duplex, err: TunnelError, clock: Clock): void {
  // Closed once the answer is written (or after a bound): a client that keeps its side open (a refused agent
  // waiting to retry) must not hold the socket, or a closing relay would wait for it until its grace ends.
  replyAndClose(socket, err, clock);
}

class DerpServerImpl implements WsRouter, DerpServer {
  readonly keyPair: KeyPair;
  readonly limits: DerpLimits;
  readonly clock: Clock;
  readonly stats: DerpStats = newStats();
  readonly requireChallenge: boolean;
  readonly #admission: DerpAdmission;
  readonly #policy: DerpPolicy;
  readonly #logger: DerpLogger;
  readonly #onPacket: DerpServerOptions['onPacket'];
  readonly #path: string;
  readonly #reserved: DerpServerOptions['reservedKeys'];
  readonly #sourceOf: (req: IncomingMessage) => string | undefined;
  readonly #refusal: (req: IncomingMessage) => TunnelError | null;
  readonly #wss: WebSocketServer;
  readonly #clients = new Map<string, RoutedPeer>();
  readonly #conns = new Set<WsPeer>();
  readonly #slots: HandshakeSlots;
  /** Packets the router drops (policy, unknown destination): counted, pooled memory given back. */
  readonly #sink = new SendSink<DropReason>({ counter: this });
  #openSockets = 0;
  #closing = false;
  #admitting = true;
  #allClosed: (() => void) | null = null;
  #sweepTimer: TimerHandle | undefined;

  constructor(opts: DerpServerOptions) {
    this.keyPair = opts.keyPair;
    this.limits = { ...DEFAULT_DERP_LIMITS, ...opts.limits };
    this.clock = opts.clock ?? realClock;
    this.requireChallenge = opts.requireChallenge ?? true;
    this.#admission = opts.admission;
    this.#policy = opts.policy;
    this.#logger = opts.logger ?? NOOP_LOGGER;
    this.#onPacket = opts.onPacket;
    this.#path = opts.path ?? '/derp';
    this.#reserved = opts.reservedKeys;
    this.#sourceOf = opts.sourceOf ?? ((req) => peerAddress(req.socket));
    this.#refusal = opts.refusal ?? (() => null);
    this.#slots = new HandshakeSlots({
      maxTotal: this.limits.maxHandshaking,
      maxPerSource: this.limits.maxHandshakingPerSource,
      counters: this.stats,
    });
    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: this.limits.maxMessageBytes,
      skipUTF8Validation: true,
      handleProtocols: (protocols) => (protocols.has('derp') ? 'derp' : false),
    });
    this.#armSweep();
  }

  // --- upgrade and connections ---------------------------------------------------------------

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const refused = this.#refusal(req);
    if (refused) {
      refuseUpgrade(socket, refused, this.clock);
      return;
    }
    if (this.#closing || !this.#admitting) {
      this.#refuse(socket, new TunnelError('CLOSED', 'relay is shutting down'));
      return;
    }
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      refuseUpgrade(
        socket,
        new TunnelError(
          'UPGRADE_REQUIRED',
          'DERP is served over WebSocket (Upgrade: websocket, subprotocol derp)',
        ),
        this.clock,
      );
      return;
    }
    const protos = req.headers['sec-websocket-protocol'] ?? '';
    if (!protos.split(',').some((p) => p.trim() === 'derp')) {
      refuseUpgrade(
        socket,
        new TunnelError('BAD_INPUT', 'WebSocket subprotocol "derp" is required'),
        this.clock,
      );
      return;
    }
    if (this.#clients.size >= this.limits.maxClients) {
      this.#refuse(socket, new TunnelError('AT_CAPACITY', 'relay is at its connection limit'));
      return;
    }
    const source = sourceKey(this.#sourceOf(req));
    const slot = this.#slots.take(source, () => socket.destroy());
    if (slot === 'source_limit') {
      refuseUpgrade(
        socket,
        new TunnelError(
          'RATE_LIMITED',
          `${this.limits.maxHandshakingPerSource} DERP handshakes from ${source} are already in progress; retry later`,
        ),
        this.clock,
      );
      return;
    }
    if (slot === 'full') {
      this.#refuse(socket, new TunnelError('AT_CAPACITY', 'relay is at its connection limit'));
      return;
    }
    // Whatever ends the socket gives the slot back (the upgrade may fail before a WsPeer exists).
    socket.once('close', () => slot.release());
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onConnection(ws, socket, slot));
  }

  #refuse(socket: Duplex, err: TunnelError): void {
    this.stats.refusedFull++;
    refuseUpgrade(socket, err, this.clock);
  }

  #onConnection(ws: WebSocket, socket: Duplex, slot: HandshakeSlot): void {
    this.stats.accepts++;
    this.#openSockets++;
    ws.once('close', () => {
      this.#openSockets--;
      if (this.#openSockets === 0 && this.#allClosed) this.#allClosed();
    });
    this.#conns.add(new WsPeer({ ws, socket, router: this, slot }));
  }

  attach(server: HttpServer | HttpsServer, opts: AttachOptions = {}): () => void {
    const other = opts.onOtherUpgrade;
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      const path = (req.url ?? '').split('?', 1)[0];
      if (path === this.#path) this.handleUpgrade(req, socket, head);
      else if (other) other(req, socket, head);
      else if (server.listenerCount('upgrade') === 1)
        refuseUpgrade(socket, new TunnelError('NOT_FOUND', 'no WebSocket endpoint here'), this.clock);
    };
    server.on('upgrade', listener);
    return () => {
      server.off('upgrade', listener);
    };
  }

  // --- admission and registry ----------------------------------------------------------------

  admit(peer: WsPeer): void {
    const finish = (ok: boolean): void => {
      if (peer.state !== 'verifying') return;
      if (this.#closing) {
        peer.close(DerpCloseCode.GoingAway, 'relay is shutting down');
        return;
      }
      if (!ok) {
        this.stats.refusedNotAdmitted++;
        this.#logger.info({ key: peer.id }, 'derp: key not admitted');
        peer.close(DerpCloseCode.NotAdmitted, 'key not admitted');
        return;
      }
      if (!this.#register(peer)) return;
      peer.activate();
    };
    let r: boolean | Promise<boolean>;
    try {
      r = this.#admission.isAdmitted(peer.key);
    } catch (err) {
      this.onError(peer, err);
      finish(false);
      return;
    }
    if (typeof r === 'boolean') {
      finish(r);
      return;
    }
    r.then(finish, (err: unknown) => {
      this.onError(peer, err);
      finish(false);
    });
  }

  #register(peer: RoutedPeer): boolean {
    const existing = this.#clients.get(peer.id);
    if (!existing && this.#clients.size >= this.limits.maxClients) {
      this.stats.refusedFull++;
      peer.close(DerpCloseCode.ClosedByServer, 'relay is at its client limit');
      return false;
    }
    this.#clients.set(peer.id, peer);
    this.stats.clients = this.#clients.size;
    if (existing) {
      this.stats.replaced++;
      this.#logger.info({ key: peer.id }, 'derp: newer connection replaces the old one');
      existing.close(DerpCloseCode.Replaced, 'replaced by a newer connection for this key');
    }
    return true;
  }

  unregister(peer: RoutedPeer): void {
    if (peer instanceof WsPeer) this.#conns.delete(peer);
    if (!peer.id) return;
    const registered = this.#clients.get(peer.id) === peer;
    if (registered) {
      this.#clients.delete(peer.id);
      this.stats.clients = this.#clients.size;
    }
    for (const w of peer.watchers) {
      w.watchers.delete(peer);
      if (registered) w.peerGone(peer.key, PeerGoneReason.Disconnected);
    }
    peer.watchers.clear();
  }

  closeClient(pubKey: Buffer, reason: string): boolean {
    if (pubKey.equals(this.keyPair.publicKey) || this.#reserved?.has(pubKey)) {
      this.#logger.warn({ key: pubKey.toString('base64'), reason }, 'derp: a reserved key is never closed');
      return false;
    }
    const peer = this.#clients.get(pubKey.toString('base64'));
    if (!peer) return false;
    peer.close(DerpCloseCode.ClosedByServer, reason.slice(0, 120));
    return true;
  }

  isConnected(pubKey: Buffer): boolean {
    return this.#clients.has(pubKey.toString('base64'));
  }

  connectLocal(keyPair: Pick<KeyPair, 'publicKey'>, handlers: LocalClientHandlers = {}): DerpClientLike {
    if (this.#closing) throw new TunnelError('CLOSED', 'the DERP server is shut down');
    const peer = new LocalPeer(keyPair.publicKey, this, handlers, NOOP);
    this.#register(peer);
    return peer;
  }

  // --- routing -------------------------------------------------------------------------------

  drop(reason: DropReason, bytes: number): void {
    this.stats.dropped[reason]++;
    this.stats.droppedBytes += bytes;
  }

  route(src: RoutedPeer, dst: Buffer, payload: Buffer, frame: Buffer | null): void {
    if (!this.#policy.canSend(src.key, dst)) {
      this.#sink.drop('policy', payload);
      return;
    }
    const target = this.#clients.get(dst.toString('base64'));
    if (!target) {
      this.#sink.drop('unknown_dest', payload); // before PeerGone: nothing reads the packet any more
      this.#notHere(src, dst);
      return;
    }
    this.#onPacket?.(src.key, dst, payload);
    if (target !== src && src.watchers.size < this.limits.maxWatchersPerPeer) src.watchers.add(target);
    target.deliver(src, payload, frame);
  }

  #notHere(src: RoutedPeer, dst: Buffer): void {
    const now = this.clock.now();
    const burst = this.limits.notHereBurst;
    src.notHereTokens = Math.min(burst, src.notHereTokens + (now - src.notHereAt) / 1000);
    src.notHereAt = now;
    if (src.notHereTokens < 1) return;
    src.notHereTokens -= 1;
    src.peerGone(dst, PeerGoneReason.NotHere);
  }

  // --- liveness and shutdown -----------------------------------------------------------------

  #armSweep(): void {
    this.#sweepTimer = this.clock.setTimer(this.limits.pingIntervalMs, () => {
      for (const peer of this.#conns) {
        if (!peer.sweep()) {
          this.stats.pingTimeouts++;
          peer.terminate();
        }
      }
      if (!this.#closing) this.#armSweep();
    });
  }

  reportError(where: string, err: unknown): void {
    this.#logger.error({ err: err instanceof Error ? err.message : String(err) }, `derp: ${where} threw`);
  }

  onError(peer: WsPeer, err: unknown): void {
    this.#logger.error(
      { key: peer.id, err: err instanceof Error ? err.message : String(err) },
      'derp: internal error',
    );
  }

  stopAdmitting(): void {
    this.#admitting = false;
  }

  shutdown(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.clock.clearTimer(this.#sweepTimer);
      // The upgrade listeners stay until their attach() callers detach them: meanwhile a new /derp connection is
      // answered 503 CLOSED (a draining relay keeps its port open for a while).
      const restarting = encodeRestarting({
        reconnectInMs: restartWindowMs(this.limits, this.#conns.size),
        tryForMs: this.limits.restartTryForMs,
      });
      for (const peer of [...this.#conns]) {
        if (peer.state === 'active') peer.sendFrame(restarting);
        peer.close(DerpCloseCode.GoingAway, 'relay restarting');
      }
      for (const peer of [...this.#clients.values()]) peer.close(DerpCloseCode.GoingAway, 'relay restarting');
    }
    if (this.#openSockets === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const prev = this.#allClosed;
      this.#allClosed = () => {
        prev?.();
        resolve();
      };
    });
  }
}

export function createDerpServer(opts: DerpServerOptions): DerpServer {
  return new DerpServerImpl(opts);
}
