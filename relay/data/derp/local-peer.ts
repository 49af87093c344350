/**
 * An in-process relay client (the hub node): the same routing, policy and counters as a WebSocket client,
 * with no socket, no handshake and no frame encoding (except in place, when a payload sent comes with
 * room for the frame header). Packets for it are handed to onPacket synchronously (the payload is a view
 * into the sender's frame, the receiver's to keep: see below).
 *
 * Pooled memory (shared/net/buffers/send-sink.ts): a packet this client sends is delivered in place; the sink of
 * the socket peer that writes it gives the memory back. A packet delivered to onPacket is never given back
 * (its receiver may keep views into it: the receive rule, shared/net/buffers/received.ts); one dropped
 * because this client is closed goes back through this client's sink.
 */

import { TunnelError } from '../../../shared/errors.js';
import { KEY_LEN } from '../../../shared/keys.js';
import { SendSink } from '../../../shared/net/buffers/send-sink.js';
import {
  encodeSendPacketInPlace,
  FRAME_HEADER_LEN,
  MAX_PACKET_LEN,
} from '../../../shared/net/derp/frames.js';
import type {
  DerpClientLike,
  DerpPacketHandler,
  DerpPeerGoneHandler,
} from '../../../shared/net/derp/types.js';
import type { DerpRouter, DropReason, RoutedPeer } from './peer.js';

export interface LocalClientHandlers {
  onPacket?: DerpPacketHandler;
  onPeerGone?: DerpPeerGoneHandler;
}

export class LocalPeer implements RoutedPeer, DerpClientLike {
  readonly key: Buffer;
  readonly id: string;
  readonly watchers = new Set<RoutedPeer>();
  notHereTokens: number;
  notHereAt = 0;
  #open = true;
  readonly #router: DerpRouter;
  readonly #handlers: LocalClientHandlers;
  readonly #onClose: (peer: LocalPeer) => void;
  /** Gives back the pooled memory of packets dropped because this client is closed. */
  readonly #sink: SendSink<DropReason>;

  constructor(
    publicKey: Buffer,
    router: DerpRouter,
    handlers: LocalClientHandlers,
    onClose: (peer: LocalPeer) => void,
  ) {
    this.key = Buffer.from(publicKey);
    this.id = this.key.toString('base64');
    this.#router = router;
    this.#handlers = handlers;
    this.#onClose = onClose;
    this.#sink = new SendSink<DropReason>({ counter: router });
    this.notHereTokens = router.limits.notHereBurst;
  }

  get publicKey(): Buffer {
    return this.key;
  }

  get connected(): boolean {
    return this.#open;
  }

  send(dst: Uint8Array, payload: Uint8Array): boolean {
    if (!this.#open) return this.#sink.refuse(payload); // the caller counts it (send-failed)
    if (dst.length !== KEY_LEN)
      throw new TunnelError('KEY_INVALID', `destination key is ${dst.length} bytes`);
    if (payload.length > MAX_PACKET_LEN) {
      throw new TunnelError('WIRE_TOO_LARGE', `packet is ${payload.length} bytes, limit ${MAX_PACKET_LEN}`);
    }
    const stats = this.#router.stats;
    stats.packetsIn++;
    stats.bytesIn += payload.length;
    // A payload granted room (shared/net/buffers/packet-room.ts) becomes a SendPacket frame in place, which a socket
    // client's deliver() turns into its RecvPacket frame in place: no copy on the way to the socket.
    const frame = encodeSendPacketInPlace(dst, payload);
    if (frame) {
      const body = FRAME_HEADER_LEN + KEY_LEN;
      this.#router.route(this, frame.subarray(FRAME_HEADER_LEN, body), frame.subarray(body), frame);
      return true;
    }
    const d = Buffer.isBuffer(dst) ? dst : Buffer.from(dst.buffer, dst.byteOffset, dst.byteLength);
    const p = Buffer.isBuffer(payload)
      ? payload
      : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    this.#router.route(this, d, p, null);
    return true;
  }

  deliver(src: RoutedPeer, payload: Buffer): void {
    if (!this.#open) {
      this.#sink.drop('gone_disconnected', payload);
      return;
    }
    const stats = this.#router.stats;
    stats.packetsOut++;
    stats.bytesOut += payload.length;
    try {
      this.#handlers.onPacket?.(src.key, payload);
    } catch (err) {
      // The sender (often a remote agent) must not be disconnected for a bug in the local handler.
      this.#router.reportError('local onPacket handler', err);
    }
  }

  peerGone(peer: Buffer, reason: number): void {
    if (this.#open) this.#handlers.onPeerGone?.(peer, reason);
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#router.unregister(this);
    this.#onClose(this);
  }
}
