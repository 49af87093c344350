/**
 * The server's view of a connected client, shared by WebSocket clients (ws-peer.ts) and in-process clients
 * (local-peer.ts), plus the counters both update.
 */
import type { Clock } from '../../../shared/clock.js';
import type { DerpLimits } from './limits.js';

export const DROP_REASONS = [
  /** The policy does not allow src -> dst. The sender is never told. */
  'policy',
  /** dst is allowed but not connected to this relay. */
  'unknown_dest',
  /** dst's socket was backed up and its queue full: its oldest queued packet was dropped. */
  'queue_head',
  /** dst closed with packets still queued, or closed while the packet was being routed. */
  'gone_disconnected',
  /** A write to dst's socket failed (counted per failed write, bytes not known). */
  'write_error',
  /** Frames sent while the sender's admission was still being checked, over maxPendingFrames. */
  'handshake_pending',
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface DerpStats {
  /** Registered clients now (WebSocket and in-process). */
  clients: number;
  /** Connections in the handshake now. */
  handshaking: number;
  /** WebSocket upgrades accepted. */
  accepts: number;
  /** Upgrades refused with 503: maxClients reached, every handshake slot held by a proved key, or shutdown. */
  refusedFull: number;
  /** Upgrades refused with 429: the source already holds maxHandshakingPerSource handshake slots. */
  refusedSourceLimit: number;
  /** Connections cut because a new upgrade took their handshake slot (no ClientInfo yet, table full). */
  handshakeEvictions: number;
  /** Clients whose key is not admitted. */
  refusedNotAdmitted: number;
  /** ClientInfo that did not open, or a wrong challenge. */
  authFailures: number;
  /** Connections closed for breaking the frame protocol. */
  protocolErrors: number;
  handshakeTimeouts: number;
  pingTimeouts: number;
  writeTimeouts: number;
  /** Connections closed because a newer one registered the same key. */
  replaced: number;
  /** Bytes: whole WebSocket messages for socket clients, payload bytes for in-process clients. */
  packetsIn: number;
  bytesIn: number;
  packetsOut: number;
  bytesOut: number;
  dropped: Record<DropReason, number>;
  droppedBytes: number;
}

export function newStats(): DerpStats {
  const dropped = {} as Record<DropReason, number>;
  for (const r of DROP_REASONS) dropped[r] = 0;
  return {
    clients: 0,
    handshaking: 0,
    accepts: 0,
    refusedFull: 0,
    refusedSourceLimit: 0,
    handshakeEvictions: 0,
    refusedNotAdmitted: 0,
    authFailures: 0,
    protocolErrors: 0,
    handshakeTimeouts: 0,
    pingTimeouts: 0,
    writeTimeouts: 0,
    replaced: 0,
    packetsIn: 0,
    bytesIn: 0,
    packetsOut: 0,
    bytesOut: 0,
    dropped,
    droppedBytes: 0,
  };
}

export interface RoutedPeer {
  readonly key: Buffer;
  /** base64 of key: the registry's map key. */
  readonly id: string;
  /** Peers that received packets from this one; told PeerGone when it leaves (capped). */
  readonly watchers: Set<RoutedPeer>;
  /**
   * Hands one packet from `src` to this client. `frame` is the sender's SendPacket frame when it may be
   * rewritten in place into a RecvPacket (same size), else null and the peer builds its own.
   */
  deliver(src: RoutedPeer, payload: Buffer, frame: Buffer | null): void;
  /** PeerGone(peer, reason). Best effort, never queued behind packets. */
  peerGone(peer: Buffer, reason: number): void;
  /** Rate limiter state for PeerGone(NotHere) replies to this sender. */
  notHereTokens: number;
  notHereAt: number;
  close(code: number, reason: string): void;
}

/** What a peer needs from the server. */
export interface DerpRouter {
  readonly limits: DerpLimits;
  readonly clock: Clock;
  readonly stats: DerpStats;
  drop(reason: DropReason, bytes: number): void;
  route(src: RoutedPeer, dst: Buffer, payload: Buffer, frame: Buffer | null): void;
  unregister(peer: RoutedPeer): void;
  /** A bug outside the relay (an in-process client's handler threw); logged, never fatal to the sender. */
  reportError(where: string, err: unknown): void;
}
