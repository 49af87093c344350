/**
 * A path carries one WireGuard datagram to one peer, and declares what it costs: the largest datagram it
 * carries and the room it writes around a datagram granted room (shared/net/buffers/packet-room.ts) to frame it in
 * place. The path manager (path-manager.ts) holds the paths to each peer and picks one per datagram;
 * nothing above it knows which.
 *
 * Kinds: `relayed` (DERP frames through the relay, relayed-path.ts; 64 KiB datagrams) and `direct` (a
 * hole-punched UDP socket; 1,420-byte datagrams and more where the network allows).
 */
import type { PacketRoom } from '../buffers/packet-room.js';

export type PathKind = 'relayed' | 'direct';

/** WireGuard datagram bytes an endpoint moved on each kind of path (received: authenticated ones only). */
export type PathBytes = Record<PathKind, { in: number; out: number }>;

export function emptyPathBytes(): PathBytes {
  return { relayed: { in: 0, out: 0 }, direct: { in: 0, out: 0 } };
}

/** No path carries a larger datagram (a DERP frame's payload limit; above any UDP payload). */
export const MAX_PATH_MTU = 65_535;

export interface Path extends PacketRoom {
  readonly kind: PathKind;
  /** Largest datagram the path carries, in bytes. */
  readonly mtu: number;
  /** Bytes the path writes in front of a datagram it was granted room for (its frame header). */
  readonly headroom: number;
  /** Bytes the path writes behind such a datagram. */
  readonly tailroom: number;
  /**
   * Hands one datagram to the transport, which may keep it until written (it owns it from now on).
   * False when it was dropped here (not connected, backed up); never throws for that.
   */
  send(datagram: Buffer): boolean;
}
