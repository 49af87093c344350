/**
 * One WebSocket client of the DERP server: handshake, frame dispatch and a bounded send queue.
 *
 * Lifecycle: handshake (ServerKey sent, waiting for ClientInfo) -> verifying (admission check running;
 * frames that arrive meanwhile are held, up to maxPendingFrames) -> active -> closed. The connection holds a
 * handshake slot until it is active or closed; while waiting for ClientInfo the slot may be evicted (the socket
 * is cut, see handshake-slots.ts).
 *
 * Sending: a packet goes straight to the socket while the socket holds fewer than writeHighWaterBytes
 * unsent; otherwise it waits in a ring of queueDepth packets, and when the ring is full the oldest is
 * dropped (queue_head). Every write completion moves the ring along. A client whose socket makes no write
 * progress for writeTimeoutMs while packets wait is terminated. Nothing here ever blocks the sender.
 *
 * Pooled memory: the peer's SendSink (shared/net/buffers/send-sink.ts) gives a frame built in place in memory a
 * pool handed down to the send path (the hub's datagrams) back once the socket has written it, or when it is
 * dropped; a payload copied into a frame of its own at once.
 */
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { TimerHandle } from '../../../shared/clock.js';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { KEY_LEN, type KeyPair } from '../../../shared/keys.js';
import { RingQueue } from '../../../shared/net/buffers/ring-queue.js';
import { SendSink } from '../../../shared/net/buffers/send-sink.js';
import { DerpCloseCode } from '../../../shared/net/derp/close-codes.js';
import { FrameParser } from '../../../shared/net/derp/frame-parser.js';
import {
  CHALLENGE_LEN,
  decodePing,
  encodePeerGone,
  encodePing,
  encodeRecvPacket,
  encodeServerKey,
  FRAME_HEADER_LEN,
  FrameType,
  KEEPALIVE_FRAME,
  MAX_PACKET_LEN,
} from '../../../shared/net/derp/frames.js';
import { decodeClientInfo, encodeServerInfo } from '../../../shared/net/derp/handshake.js';
import { WriteBatcher } from '../../../shared/net/derp/write-batcher.js';
import type { HandshakeSlot } from './handshake-slots.js';
import type { DerpRouter, DropReason, RoutedPeer } from './peer.js';

export interface WsRouter extends DerpRouter {
  readonly keyPair: KeyPair;
  /** Refuse ClientInfo without the ServerKey challenge echoed (replay protection). */
  readonly requireChallenge: boolean;
  /** Called once the ClientInfo opened; the router checks admission, then calls activate() or close(). */
  admit(peer: WsPeer): void;
  onError(peer: WsPeer, err: unknown): void;
}

export interface WsPeerOptions {
  readonly ws: WebSocket;
  /** The upgraded socket under `ws` (used only to batch writes). */
  readonly socket: Duplex;
  readonly router: WsRouter;
  /** The handshake slot the server gave this connection (handshake-slots.ts). */
  readonly slot: HandshakeSlot;
}

export type WsPeerState = 'handshake' | 'verifying' | 'active' | 'closed';

const SEND_OPTS = { binary: true, compress: false, fin: true } as const;
const NO_KEY = Buffer.alloc(0);

export class WsPeer implements RoutedPeer {
  key: Buffer = NO_KEY;
  id = '';
  readonly watchers = new Set<RoutedPeer>();
  notHereTokens: number;
  notHereAt = 0;
  /** Cleared by each ping sweep, set by a pong or any message. */
  alive = true;
  #state: WsPeerState = 'handshake';
  readonly #webSocket: WebSocket;
  readonly #batcher: WriteBatcher;
  readonly #router: WsRouter;
  readonly #parser: FrameParser;
  /**
   * Sent in ServerKey, checked once against ClientInfo, then released: a random 32-byte Buffer holds its
   * own ArrayBuffer (~0.5 KiB of RSS per connection), useless once the handshake is done.
   */
  #challenge: Buffer | null;
  #sharedKey: Uint8Array | null = null;
  #hsTimer: TimerHandle | undefined;
  /** Frames that arrived while admission was checked, replayed once active. */
  #pending: RingQueue<Buffer> | null = null;
  /** Allocated on first use: most clients never back up. */
  #queue: RingQueue<Buffer> | null = null;
  #stallTimer: TimerHandle | undefined;
  #lastProgress = 0;
  #closeTimer: TimerHandle | undefined;
  /** Held from the upgrade until admitted or closed. */
  readonly #slot: HandshakeSlot;
  /** The bottom of this socket's send path: gives pooled frames back, counts drops (the router's stats). */
  readonly #sink: SendSink<DropReason>;

  /** One bound callback for every write (no per-packet closure); the sink calls it after pooled writes. */
  readonly #onWritten = (err?: Error | null): void => {
    if (err) {
      this.#router.drop('write_error', 0); // the socket failed; 'close' follows
      return;
    }
    if (this.#state === 'closed') return;
    this.#lastProgress = this.#router.clock.now();
    this.#flush();
  };

  constructor({ ws, socket, router, slot }: WsPeerOptions) {
    this.#webSocket = ws;
    this.#batcher = new WriteBatcher(socket);
    this.#router = router;
    this.#sink = new SendSink<DropReason>({ counter: router, onWritten: this.#onWritten });
    this.#slot = slot;
    this.notHereTokens = router.limits.notHereBurst;
    this.#parser = new FrameParser((type, frame) => this.#onFrame(type, frame), router.limits.maxFrameLen);
    const challenge = randomBytes(CHALLENGE_LEN);
    this.#challenge = challenge;
    ws.on('message', (data, isBinary) => this.#onMessage(data as Buffer, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', () => {}); // 'close' follows every error
    ws.on('close', () => this.#onClose());
    this.#hsTimer = router.clock.setTimer(router.limits.handshakeTimeoutMs, () => {
      this.#hsTimer = undefined;
      if (this.#state === 'handshake' || this.#state === 'verifying') {
        router.stats.handshakeTimeouts++;
        this.close(DerpCloseCode.HandshakeTimeout, 'handshake timeout');
      }
    });
    ws.send(encodeServerKey(router.keyPair.publicKey, challenge), SEND_OPTS);
  }

  get state(): WsPeerState {
    return this.#state;
  }

  /** Packets waiting in the ring. */
  get queuedPackets(): number {
    return this.#queue?.length ?? 0;
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    if (this.#state === 'closed') return;
    this.alive = true;
    this.#router.stats.bytesIn += data.length;
    if (!isBinary) {
      this.#fail(new TunnelError('DERP_PROTOCOL', 'text WebSocket message; DERP frames are binary'));
      return;
    }
    try {
      const frame = this.#parser.whole(data);
      if (frame) this.#onFrame(frame[0]!, frame);
      else this.#parser.push(data);
    } catch (err) {
      this.#fail(err);
    }
  }

  #fail(err: unknown): void {
    const stats = this.#router.stats;
    if (isTunnelError(err, 'DERP_AUTH_FAILED')) {
      stats.authFailures++;
      this.close(DerpCloseCode.NotAdmitted, 'authentication failed');
    } else if (isTunnelError(err)) {
      stats.protocolErrors++;
      this.close(DerpCloseCode.Protocol, err.message.slice(0, 120));
    } else {
      this.#router.onError(this, err);
      this.close(1011, 'internal error');
    }
  }

  #onFrame(type: number, frame: Buffer): void {
    switch (this.#state) {
      case 'active':
        this.#handleFrame(type, frame);
        return;
      case 'handshake':
        this.#onClientInfo(type, frame);
        return;
      case 'verifying':
        if (!this.#pending?.push(Buffer.from(frame))) this.#router.drop('handshake_pending', frame.length);
        return;
      default:
        return;
    }
  }

  #onClientInfo(type: number, frame: Buffer): void {
    if (type !== FrameType.ClientInfo) {
      throw new TunnelError('DERP_PROTOCOL', `expected ClientInfo (0x02) first, got frame type ${type}`);
    }
    const opened = decodeClientInfo(frame.subarray(FRAME_HEADER_LEN), this.#router.keyPair.privateKey);
    const echoed = opened.info.challenge;
    const challenge = this.#challenge;
    this.#challenge = null; // one ClientInfo per connection: a second one is a protocol error
    if (echoed !== undefined || this.#router.requireChallenge) {
      if (challenge === null || echoed !== challenge.toString('hex')) {
        throw new TunnelError('DERP_AUTH_FAILED', 'client info does not echo this connection challenge');
      }
    }
    this.key = opened.clientKey;
    this.id = opened.clientKey.toString('base64');
    this.#sharedKey = opened.key;
    this.#state = 'verifying';
    this.#slot.prove();
    this.#pending = new RingQueue<Buffer>({ capacity: this.#router.limits.maxPendingFrames });
    this.#router.admit(this);
  }

  /** Admission passed and the peer is registered: finish the handshake and replay held frames. */
  activate(): void {
    if (this.#state !== 'verifying') return;
    this.#endHandshake();
    this.#state = 'active';
    this.#webSocket.send(encodeServerInfo(this.#sharedKey!), SEND_OPTS, this.#onWritten);
    this.#sharedKey = null;
    const pending = this.#pending;
    this.#pending = null;
    try {
      for (let f = pending?.shift(); f !== undefined; f = pending?.shift()) this.#handleFrame(f[0]!, f);
    } catch (err) {
      this.#fail(err);
    }
  }

  #endHandshake(): void {
    if (this.#hsTimer) this.#router.clock.clearTimer(this.#hsTimer);
    this.#hsTimer = undefined;
    this.#slot.release();
  }

  #handleFrame(type: number, frame: Buffer): void {
    if (this.#state !== 'active') return;
    if (type === FrameType.SendPacket) {
      const bodyLen = frame.length - FRAME_HEADER_LEN;
      if (bodyLen < KEY_LEN || bodyLen - KEY_LEN > MAX_PACKET_LEN) {
        throw new TunnelError(
          'DERP_PROTOCOL',
          `send packet body is ${bodyLen} bytes, expected 32..${32 + MAX_PACKET_LEN}`,
        );
      }
      this.#router.stats.packetsIn++;
      const dst = frame.subarray(FRAME_HEADER_LEN, FRAME_HEADER_LEN + KEY_LEN);
      this.#router.route(this, dst, frame.subarray(FRAME_HEADER_LEN + KEY_LEN), frame);
    } else if (type === FrameType.Ping) {
      this.#sendControl(encodePing(FrameType.Pong, decodePing(frame.subarray(FRAME_HEADER_LEN))));
    } else if (type === FrameType.ClientInfo) {
      throw new TunnelError('DERP_PROTOCOL', 'second ClientInfo on one connection');
    }
    // NotePreferred, Pong, KeepAlive and unknown types are skipped.
  }

  deliver(src: RoutedPeer, payload: Buffer, frame: Buffer | null): void {
    if (this.#state !== 'active') {
      this.#sink.drop('gone_disconnected', payload);
      return;
    }
    let f: Buffer;
    if (frame) {
      // SendPacket(dst, payload) -> RecvPacket(src, payload): same length, rewritten in place.
      f = frame;
      f[0] = FrameType.RecvPacket;
      src.key.copy(f, FRAME_HEADER_LEN);
    } else {
      f = encodeRecvPacket(src.key, payload);
      this.#sink.sent(payload); // copied into a frame of its own
    }
    if (
      this.queuedPackets === 0 &&
      this.#webSocket.bufferedAmount < this.#router.limits.writeHighWaterBytes
    ) {
      this.#write(f);
      return;
    }
    this.#queue ??= new RingQueue<Buffer>({ capacity: this.#router.limits.queueDepth });
    const old = this.#queue.pushEvicting(f);
    if (old) this.#sink.drop('queue_head', old, old.length - FRAME_HEADER_LEN - KEY_LEN);
    if (!this.#stallTimer) {
      this.#lastProgress = this.#router.clock.now();
      this.#armStallTimer(this.#router.limits.writeTimeoutMs);
    }
  }

  #write(f: Buffer): void {
    const stats = this.#router.stats;
    stats.packetsOut++;
    stats.bytesOut += f.length;
    this.#batcher.hold();
    this.#webSocket.send(f, SEND_OPTS, this.#sink.completion(f));
  }

  #flush(): void {
    const queue = this.#queue;
    if (!queue) return;
    const high = this.#router.limits.writeHighWaterBytes;
    while (this.#webSocket.bufferedAmount < high) {
      const f = queue.shift();
      if (f === undefined) return;
      this.#write(f);
    }
  }

  #armStallTimer(ms: number): void {
    const clock = this.#router.clock;
    this.#stallTimer = clock.setTimer(ms, () => {
      this.#stallTimer = undefined;
      if (this.#state === 'closed' || this.queuedPackets === 0) return;
      const idle = clock.now() - this.#lastProgress;
      const limit = this.#router.limits.writeTimeoutMs;
      if (idle >= limit) {
        this.#router.stats.writeTimeouts++;
        this.#state = 'closed';
        this.#router.unregister(this);
        this.#webSocket.terminate();
      } else {
        this.#armStallTimer(limit - idle);
      }
    });
  }

  /** Small frames (pong, PeerGone, KeepAlive) skip the packet ring; a stuck socket just loses them. */
  #sendControl(f: Buffer): void {
    if (
      this.#state === 'closed' ||
      this.#webSocket.bufferedAmount > 4 * this.#router.limits.writeHighWaterBytes
    )
      return;
    this.#webSocket.send(f, SEND_OPTS, this.#onWritten);
  }

  peerGone(peer: Buffer, reason: number): void {
    this.#sendControl(encodePeerGone(peer, reason));
  }

  /** Called by the server's ping sweep. Returns false when the peer missed the previous ping. */
  sweep(): boolean {
    if (this.#state !== 'active') return true;
    if (!this.alive) return false;
    this.alive = false;
    this.#webSocket.ping();
    this.#sendControl(KEEPALIVE_FRAME);
    return true;
  }

  /** Sends a frame outside the packet path (Restarting, Health). */
  sendFrame(f: Buffer): void {
    this.#sendControl(f);
  }

  close(code: number, reason: string): void {
    if (this.#state === 'closed') return;
    this.#endHandshake();
    this.#state = 'closed';
    this.#router.unregister(this);
    this.#webSocket.close(code, reason);
    this.#closeTimer = this.#router.clock.setTimer(this.#router.limits.closeGraceMs, () =>
      this.#webSocket.terminate(),
    );
  }

  terminate(): void {
    this.#endHandshake();
    this.#state = 'closed';
    this.#router.unregister(this);
    this.#webSocket.terminate();
  }

  #onClose(): void {
    this.#endHandshake();
    this.#state = 'closed';
    const clock = this.#router.clock;
    clock.clearTimer(this.#closeTimer);
    clock.clearTimer(this.#stallTimer);
    this.#stallTimer = undefined;
    for (let f = this.#queue?.shift(); f !== undefined; f = this.#queue?.shift())
      this.#sink.drop('gone_disconnected', f, f.length - FRAME_HEADER_LEN - KEY_LEN);
    this.#pending = null;
    this.#router.unregister(this);
  }
}
