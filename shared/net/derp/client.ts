/**
 * The relay client over WebSocket (`wss://host:port/derp`, subprotocol `derp`): TLS with an optional CA pin,
 * the DERP handshake, packets, liveness and endless reconnects.
 *
 * Per connection: TLS (pin checked on the upgrade response, before anything is sent over it) -> ServerKey
 * (magic, optional expected server key) -> ClientInfo sealed to the server key, echoing the challenge ->
 * ServerInfo -> connected. Any frame, or a WebSocket ping, counts as a sign of life; after pingIntervalMs of
 * silence the client sends a DERP Ping, after deadAfterMs it drops the connection. Reconnects use
 * exponential backoff with jitter (backoff.ts, capped at 30 s) and never stop until close(). A Restarting
 * frame replaces the backoff: the next attempt comes within reconnectInMs, then retries at most 1 s apart
 * for tryForMs.
 */
import { randomBytes } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { WebSocket } from 'ws';
import { type Clock, realClock, type TimerHandle } from '../../clock.js';
import { isTunnelError, TunnelError } from '../../errors.js';
import { KEY_LEN } from '../../keys.js';
import { checkPin, parseCaPin } from '../../tls-pin.js';
import { SendSink } from '../buffers/send-sink.js';
import {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_BACKOFF,
  RECONNECT_FLOOR_MS,
  STABLE_CONNECTION_MS,
} from './backoff.js';
import type {
  DerpClient,
  DerpClientDropReason,
  DerpClientOptions,
  DerpClientState,
  DerpClientStats,
  DerpStateEvent,
} from './client-options.js';
import { DerpCloseCode } from './close-codes.js';
import { FrameParser } from './frame-parser.js';
import {
  decodePacket,
  decodePeerGone,
  decodePing,
  decodeRestarting,
  decodeServerKey,
  encodePing,
  encodeSendPacket,
  FRAME_HEADER_LEN,
  FrameType,
  MAX_FRAME_LEN,
  PING_LEN,
  type RestartingBody,
} from './frames.js';
import { decodeServerInfo, encodeClientInfo, sharedKey } from './handshake.js';

export type { DerpClient, DerpClientOptions, DerpClientState, DerpClientStats, DerpStateEvent };

import { WriteBatcher } from './write-batcher.js';

const SEND_OPTS = { binary: true, compress: false, fin: true } as const;
/** After close code Replaced (4003) the next attempt waits as the 6th would (8-16 s with the default backoff). */
const REPLACED_MIN_ATTEMPT = 5;
/**
 * WebSocket masking exists to stop browsers' scripts from poisoning intermediary caches; this client is not
 * a browser and runs inside TLS, so it uses the all-zero mask, which ws sends without copying or XORing.
 */
const zeroMask = (mask: Buffer): void => {
  mask.fill(0);
};

class WsDerpClient implements DerpClient {
  readonly publicKey: Buffer;
  readonly stats: DerpClientStats = {
    packetsIn: 0,
    bytesIn: 0,
    packetsOut: 0,
    bytesOut: 0,
    dropped: 0,
    connects: 0,
  };
  /** Counts what the sinks drop, either reason, in stats.dropped. */
  readonly #drops = {
    drop: (): void => {
      this.stats.dropped++;
    },
  };
  /** The bottom of the send path of the current WebSocket (a new one per connection: its writes' order). */
  #sink = new SendSink<DerpClientDropReason>({ counter: this.#drops });
  #state: DerpClientState = 'connecting';
  readonly #options: DerpClientOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #pin: string | undefined;
  readonly #pingMs: number;
  readonly #deadMs: number;
  readonly #highWater: number;
  #webSocket: WebSocket | null = null;
  #batcher: WriteBatcher | null = null;
  #phase: 'serverKey' | 'serverInfo' | 'up' = 'serverKey';
  #key: Uint8Array | null = null;
  #attempt = 0;
  /** When the current connection came up (clock ms), or null while not connected. */
  #upSince: number | null = null;
  #lastRx = 0;
  #lastError: TunnelError | undefined;
  /** The close code of the last connection that closed (undefined: none closed yet, or it never opened). */
  #lastCloseCode: number | undefined;
  #restart: (RestartingBody & { at: number }) | null = null;
  #timer: TimerHandle | undefined;
  #hsTimer: TimerHandle | undefined;
  #waiters: Array<() => void> = [];
  #closeWaiters: Array<(e: TunnelError) => void> = [];

  constructor(o: DerpClientOptions) {
    this.#options = o;
    this.publicKey = o.keyPair.publicKey;
    this.#clock = o.clock ?? realClock;
    this.#random = o.random ?? Math.random;
    this.#pin = o.caPin === undefined ? undefined : parseCaPin(o.caPin);
    this.#pingMs = o.pingIntervalMs ?? 5_000;
    this.#deadMs = o.deadAfterMs ?? 12_000;
    this.#highWater = o.writeHighWaterBytes ?? 1024 * 1024;
    this.#connect();
  }

  get state(): DerpClientState {
    return this.#state;
  }

  get connected(): boolean {
    return this.#state === 'connected';
  }

  #emit(e: Omit<DerpStateEvent, 'attempt'>): void {
    this.#options.onState?.({ ...e, attempt: this.#attempt });
  }

  #connect(): void {
    if (this.#state === 'closed') return;
    this.#state = 'connecting';
    this.#phase = 'serverKey';
    this.#lastError = undefined;
    this.#emit({ state: 'connecting' });
    const o = this.#options;
    let ws: WebSocket;
    try {
      ws = this.#open();
    } catch (err) {
      // Not expected after the checks in connectDerp; never let a timer callback throw.
      this.#lastError = isTunnelError(err)
        ? err
        : new TunnelError('CLOSED', `relay connection failed: ${String(err)}`);
      this.#attempt++;
      const delayMs = this.#nextDelay();
      this.#state = 'reconnecting';
      this.#emit({ state: 'reconnecting', delayMs, error: this.#lastError });
      this.#timer = this.#clock.setTimer(delayMs, () => this.#connect());
      return;
    }
    this.#webSocket = ws;
    const parser = new FrameParser((type, frame) => this.#onFrame(ws, type, frame));
    this.#wire(ws, parser, o);
  }

  #open(): WebSocket {
    const o = this.#options;
    return new WebSocket(o.url, 'derp', {
      agent: o.agent,
      ca: o.ca,
      // With only a pin, the pin is the trust anchor (checked on the upgrade response below).
      rejectUnauthorized: this.#pin === undefined || o.ca !== undefined,
      perMessageDeflate: false,
      maxPayload: 4 * (MAX_FRAME_LEN + FRAME_HEADER_LEN),
      skipUTF8Validation: true,
      handshakeTimeout: o.handshakeTimeoutMs ?? 10_000,
      generateMask: zeroMask,
    });
  }

  #wire(ws: WebSocket, parser: FrameParser, o: DerpClientOptions): void {
    ws.on('upgrade', (res) => {
      this.#batcher = new WriteBatcher(res.socket);
      this.#sink = new SendSink<DerpClientDropReason>({ counter: this.#drops });
      if (this.#pin === undefined) return;
      try {
        checkPin(this.#pin, (res.socket as TLSSocket).getPeerCertificate?.()?.raw, 'relay');
      } catch (err) {
        this.#lastError = err as TunnelError;
        ws.terminate();
      }
    });
    ws.on('open', () => {
      this.#lastRx = this.#clock.now();
      this.#hsTimer = this.#clock.setTimer(o.handshakeTimeoutMs ?? 10_000, () => {
        this.#lastError = new TunnelError('TIMEOUT', 'relay did not finish the DERP handshake in time');
        ws.terminate();
      });
      this.#armTick(ws);
    });
    ws.on('message', (data: Buffer) => {
      this.#lastRx = this.#clock.now();
      try {
        const frame = parser.whole(data);
        if (frame) this.#onFrame(ws, frame[0]!, frame);
        else parser.push(data);
      } catch (err) {
        this.#lastError = isTunnelError(err) ? err : new TunnelError('INTERNAL', 'relay client failure');
        ws.terminate();
      }
    });
    ws.on('ping', () => {
      this.#lastRx = this.#clock.now();
    });
    ws.on('error', (err: Error) => {
      this.#lastError ??= isTunnelError(err)
        ? err
        : new TunnelError('CLOSED', `relay connection failed: ${err.message}`);
    });
    ws.on('close', (code: number, reason: Buffer) => this.#onClose(ws, code, reason.toString()));
  }

  #onFrame(ws: WebSocket, type: number, frame: Buffer): void {
    const body = frame.subarray(FRAME_HEADER_LEN);
    if (this.#phase === 'up') {
      switch (type) {
        case FrameType.RecvPacket: {
          const p = decodePacket(body);
          this.stats.packetsIn++;
          this.stats.bytesIn += p.payload.length;
          this.#options.onPacket(p.key, p.payload);
          return;
        }
        case FrameType.Ping:
          ws.send(encodePing(FrameType.Pong, decodePing(body)), SEND_OPTS);
          return;
        case FrameType.PeerGone: {
          const g = decodePeerGone(body);
          this.#options.onPeerGone?.(g.peer, g.reason);
          return;
        }
        case FrameType.Health:
          this.#emit({ state: this.#state, health: body.toString('utf8') });
          return;
        case FrameType.Restarting:
          this.#restart = { ...decodeRestarting(body), at: this.#clock.now() };
          return;
        default:
          return; // KeepAlive, Pong, unknown
      }
    }
    if (this.#phase === 'serverKey') {
      if (type !== FrameType.ServerKey)
        throw new TunnelError('DERP_PROTOCOL', `expected ServerKey, got type ${type}`);
      const sk = decodeServerKey(body);
      if (this.#options.serverPublicKey && !sk.serverKey.equals(this.#options.serverPublicKey)) {
        throw new TunnelError(
          'DERP_AUTH_FAILED',
          'relay presented a different DERP server key than expected',
        );
      }
      this.#key = sharedKey(sk.serverKey, this.#options.keyPair.privateKey);
      ws.send(encodeClientInfo(this.publicKey, this.#key, sk.challenge), SEND_OPTS);
      this.#phase = 'serverInfo';
      return;
    }
    if (type !== FrameType.ServerInfo) return;
    decodeServerInfo(body, this.#key!);
    this.#key = null;
    this.#phase = 'up';
    this.#clock.clearTimer(this.#hsTimer);
    // The attempt count starts over only once this connection has proved stable (see #onClose).
    this.#upSince = this.#clock.now();
    this.#restart = null;
    this.stats.connects++;
    this.#state = 'connected';
    this.#emit({ state: 'connected' });
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#closeWaiters = [];
    for (const w of waiters) w();
  }

  #armTick(ws: WebSocket): void {
    const tick = Math.max(100, Math.min(this.#pingMs, this.#deadMs) / 2);
    this.#timer = this.#clock.setTimer(tick, () => {
      if (this.#webSocket !== ws) return;
      const idle = this.#clock.now() - this.#lastRx;
      if (idle >= this.#deadMs) {
        this.#lastError = new TunnelError(
          'TIMEOUT',
          `no frame from the relay for ${Math.round(idle / 1000)} s`,
        );
        ws.terminate();
        return;
      }
      if (idle >= this.#pingMs && this.#phase === 'up')
        ws.send(encodePing(FrameType.Ping, randomBytes(PING_LEN)), SEND_OPTS);
      this.#armTick(ws);
    });
  }

  #onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.#webSocket !== ws) return;
    this.#webSocket = null;
    this.#clock.clearTimer(this.#timer);
    this.#clock.clearTimer(this.#hsTimer);
    if (this.#state === 'closed') return;
    let error = this.#lastError;
    if (!error) {
      const why = reason ? `: ${reason}` : '';
      if (code === DerpCloseCode.NotAdmitted)
        error = new TunnelError('DERP_AUTH_FAILED', `relay refused this key${why}`);
      else if (code === DerpCloseCode.Replaced)
        error = new TunnelError('CONFLICT', `another connection with this key replaced this one${why}`);
      else error = new TunnelError('CLOSED', `relay closed the connection (code ${code})${why}`);
    }
    this.#lastCloseCode = code;
    const upSince = this.#upSince;
    this.#upSince = null;
    if (upSince !== null && this.#clock.now() - upSince >= STABLE_CONNECTION_MS) this.#attempt = 0;
    // Replaced by a live twin (a cloned key or a second process): wait long so the two do not flap.
    if (code === DerpCloseCode.Replaced) this.#attempt = Math.max(this.#attempt, REPLACED_MIN_ATTEMPT);
    this.#attempt++;
    const delayMs = this.#nextDelay();
    this.#state = 'reconnecting';
    this.#emit({ state: 'reconnecting', delayMs, error, closeCode: code });
    this.#timer = this.#clock.setTimer(delayMs, () => this.#connect());
  }

  #nextDelay(): number {
    return Math.max(RECONNECT_FLOOR_MS, this.#backoffOrRestart());
  }

  #backoffOrRestart(): number {
    const r = this.#restart;
    if (r) {
      const since = this.#clock.now() - r.at;
      if (since < r.reconnectInMs) return Math.round(this.#random() * (r.reconnectInMs - since));
      if (since < r.reconnectInMs + r.tryForMs)
        return Math.min(1000, backoffDelay(this.#attempt, this.#backoff(), this.#random));
      // The announced restart window is over: back off as after a fresh disconnect, not from the count the
      // fast retries ran up (which would jump straight to 15-30 s waits).
      this.#restart = null;
      this.#attempt = 1;
    }
    return backoffDelay(this.#attempt, this.#backoff(), this.#random);
  }

  #backoff(): BackoffOptions {
    return this.#options.backoff ?? DEFAULT_BACKOFF;
  }

  /**
   * Sends one packet, or drops it (false) when not connected or backed up. Pooled memory handed down to the
   * send path (shared/net/buffers/buffer-pool.ts) goes back through the connection's SendSink: once the
   * socket has written the frame, or at once when the packet is dropped or copied into a frame of its own.
   */
  send(dst: Uint8Array, payload: Uint8Array): boolean {
    const ws = this.#webSocket;
    const sink = this.#sink;
    if (this.#phase !== 'up' || !ws || this.#state !== 'connected' || ws.readyState !== WebSocket.OPEN)
      return sink.drop('not_connected', payload);
    if (ws.bufferedAmount > this.#highWater) return sink.drop('backed_up', payload);
    const f = encodeSendPacket(dst, payload);
    this.stats.packetsOut++;
    this.stats.bytesOut += payload.length;
    this.#batcher?.hold();
    if (f.buffer !== payload.buffer) sink.sent(payload); // copied into a frame of its own
    ws.send(f, SEND_OPTS, sink.completion(f));
    return true;
  }

  whenConnected(timeoutMs = 30_000): Promise<void> {
    if (this.#state === 'connected') return Promise.resolve();
    if (this.#state === 'closed') return Promise.reject(new TunnelError('CLOSED', 'relay client is closed'));
    return new Promise((resolve, reject) => {
      const t = this.#clock.setTimer(timeoutMs, () =>
        reject(new TunnelError('TIMEOUT', 'relay not connected in time')),
      );
      this.#waiters.push(() => {
        this.#clock.clearTimer(t);
        resolve();
      });
      this.#closeWaiters.push((e) => {
        this.#clock.clearTimer(t);
        reject(e);
      });
    });
  }

  /**
   * The relay answered elsewhere (the agent's lease renewal): a reconnect waiting out its backoff tries now. Not
   * after close code Replaced (a live twin holds the key: the long wait keeps the two from flapping). True when an
   * attempt started.
   */
  reconnectNow(): boolean {
    if (this.#state !== 'reconnecting' || this.#lastCloseCode === DerpCloseCode.Replaced) return false;
    this.#clock.clearTimer(this.#timer);
    this.#connect();
    return true;
  }

  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#clock.clearTimer(this.#timer);
    this.#clock.clearTimer(this.#hsTimer);
    const ws = this.#webSocket;
    this.#webSocket = null;
    ws?.close(1000, 'client closing');
    if (ws) this.#clock.setTimer(1000, () => ws.terminate());
    this.#emit({ state: 'closed' });
    const err = new TunnelError('CLOSED', 'relay client is closed');
    for (const w of this.#closeWaiters) w(err);
    this.#closeWaiters = [];
    this.#waiters = [];
  }
}

/**
 * Starts a relay client; it connects at once and keeps reconnecting until close(). Throws BAD_INPUT for a URL
 * that is not ws(s)://, a CA pin on a ws:// URL or a malformed pin, and KEY_INVALID for a bad key pair.
 */
export function connectDerp(opts: DerpClientOptions): DerpClient {
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch {
    throw new TunnelError('BAD_INPUT', `relay URL '${opts.url}' is not a URL; expected wss://host:port/derp`);
  }
  if (url.protocol !== 'wss:' && url.protocol !== 'ws:') {
    throw new TunnelError(
      'BAD_INPUT',
      `relay URL '${opts.url}' must start with wss:// (or ws:// behind a TLS proxy)`,
    );
  }
  if (url.protocol === 'ws:' && opts.caPin !== undefined) {
    throw new TunnelError('BAD_INPUT', `a CA pin needs a wss:// relay URL, got '${opts.url}'`);
  }
  if (opts.keyPair.privateKey.length !== KEY_LEN || opts.keyPair.publicKey.length !== KEY_LEN) {
    throw new TunnelError('KEY_INVALID', 'relay client key pair must hold two 32-byte keys');
  }
  return new WsDerpClient(opts);
}
