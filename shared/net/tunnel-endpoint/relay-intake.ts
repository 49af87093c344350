/**
 * How a datagram over the relay reaches a tunnel endpoint (TunnelEndpoint.receiveRelayed): a disco message goes to
 * its disco side; a WireGuard datagram goes through the intake its owner supplies, one options object:
 * - `peerOf`, the owner's peer directory: the paths of the peer relay key `src` is, or undefined when the owner
 *   holds the datagram (it looks the key up, and hands the datagram to `TunnelEndpoint.admit` once admitted) or drops
 *   it;
 * - `handshakes`, the owner's handshake queue: every admitted datagram goes there (transport data passes at once,
 *   handshake messages wait their turn), and on to `TunnelEndpoint.receive`; absent: straight to `receive`.
 * Without an intake, the peer is the one whose public key is `src`.
 */
import type { PeerPaths } from './peer-paths.js';

export interface EndpointIntake {
  peerOf(src: Buffer, datagram: Buffer): PeerPaths | undefined;
  readonly handshakes?: { receive(datagram: Buffer, from: PeerPaths): void };
}
