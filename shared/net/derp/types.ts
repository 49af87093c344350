/**
 * What the path layer needs from a relay client, whichever the transport: a WebSocket client
 * (shared/net/derp/client.ts, agents) or the relay's in-process client (relay/derp, the hub node).
 */
import type { Received } from '../buffers/received.js';

/**
 * Called for every packet relayed to this client. `payload` is the receiver's under the receive rule
 * (shared/net/buffers/received.ts): it may keep views into it.
 */
export type DerpPacketHandler = (src: Buffer, payload: Received) => void;

/** A peer this client heard from left the relay (reason 0x00), or a destination is not connected (0x01). */
export type DerpPeerGoneHandler = (peer: Buffer, reason: number) => void;

export interface DerpClientLike {
  readonly publicKey: Buffer;
  /** True while packets can be sent (handshake done). */
  readonly connected: boolean;
  /**
   * Relays `payload` (<= 65,535 bytes) to `dst`. Returns false when the packet was dropped here
   * (not connected, or the socket is backed up); the caller drops it too (WireGuard retransmits).
   */
  send(dst: Uint8Array, payload: Uint8Array): boolean;
  /** Stops the client for good (no reconnect). Idempotent. */
  close(): void;
}
