/**
 * The relayed path to one peer: each datagram becomes a DERP SendPacket frame to the peer's key, through
 * a relay client (the agent's WebSocket client, or the hub's in-process client of the DERP server). The
 * relay carries 65,535-byte payloads, and the frame header and key are written in front of a datagram
 * granted SEND_PACKET_HEADROOM.
 */
import { MAX_PACKET_LEN, SEND_PACKET_HEADROOM } from '../derp/frames.js';
import type { DerpClientLike } from '../derp/types.js';
import type { Path } from './path.js';

export class RelayedPath implements Path {
  readonly kind = 'relayed';
  readonly mtu = MAX_PACKET_LEN;
  readonly headroom = SEND_PACKET_HEADROOM;
  readonly tailroom = 0;
  readonly #relay: Pick<DerpClientLike, 'send'>;
  readonly #peerKey: Buffer;

  /** `peerKey`: the peer's 32-byte key on the relay (its WireGuard public key). */
  constructor(relay: Pick<DerpClientLike, 'send'>, peerKey: Buffer) {
    this.#relay = relay;
    this.#peerKey = peerKey;
  }

  send(datagram: Buffer): boolean {
    return this.#relay.send(this.#peerKey, datagram);
  }
}
