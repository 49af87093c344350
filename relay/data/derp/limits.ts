/**
 * Every cap and timer of the DERP server, with its default. docs/LIMITS.md lists them.
 */
import { MAX_FRAME_LEN } from '../../../shared/net/derp/frames.js';

export interface DerpLimits {
  /** Registered (handshaken) clients at once. Upgrades over the cap get HTTP 503. */
  readonly maxClients: number;
  /**
   * Connections still in the handshake at once (counted on top of maxClients). When all are held, a new upgrade
   * takes the slot of the oldest connection that has not sent ClientInfo yet (handshake-slots.ts).
   */
  readonly maxHandshaking: number;
  /** Handshakes in progress per source (IPv4 address or IPv6 /64). Upgrades over it get HTTP 429. */
  readonly maxHandshakingPerSource: number;
  /** A connection must send a valid ClientInfo within this many ms or it is closed (4005). */
  readonly handshakeTimeoutMs: number;
  /** Packets queued per client once its socket is backed up; the oldest is dropped (queue_head). */
  readonly queueDepth: number;
  /** Bytes the WebSocket/TLS socket may hold unsent before packets go to the queue instead. */
  readonly writeHighWaterBytes: number;
  /** A client whose socket makes no write progress for this long while packets wait is terminated. */
  readonly writeTimeoutMs: number;
  /** WebSocket ping (and KeepAlive frame) interval; a client that did not answer the previous ping is dropped. */
  readonly pingIntervalMs: number;
  /** Largest frame body accepted (the parser's limit). */
  readonly maxFrameLen: number;
  /** Largest WebSocket message accepted (a message may hold several frames). */
  readonly maxMessageBytes: number;
  /** Frames that arrive while admission is being checked are held, up to this many; the rest are dropped. */
  readonly maxPendingFrames: number;
  /** Clients remembered per source key for PeerGone notices. */
  readonly maxWatchersPerPeer: number;
  /** PeerGone(NotHere) replies for unknown destinations: burst, then one per second, per sender. */
  readonly notHereBurst: number;
  /**
   * Restarting frame sent by shutdown(): clients reconnect at a random point within this window, widened to
   * spread restartReconnectsPerSecond reconnects per second when many are connected (restartWindowMs).
   */
  readonly restartReconnectInMs: number;
  readonly restartReconnectsPerSecond: number;
  readonly restartMaxReconnectInMs: number;
  readonly restartTryForMs: number;
  /** shutdown() terminates sockets whose close handshake has not finished after this long. */
  readonly closeGraceMs: number;
}

export const DEFAULT_DERP_LIMITS: DerpLimits = {
  maxClients: 10_000,
  maxHandshaking: 4_096,
  maxHandshakingPerSource: 32,
  handshakeTimeoutMs: 10_000,
  queueDepth: 32,
  writeHighWaterBytes: 256 * 1024,
  writeTimeoutMs: 10_000,
  pingIntervalMs: 20_000,
  maxFrameLen: MAX_FRAME_LEN,
  maxMessageBytes: 4 * (MAX_FRAME_LEN + 5),
  maxPendingFrames: 32,
  maxWatchersPerPeer: 10_000,
  notHereBurst: 3,
  restartReconnectInMs: 250,
  restartReconnectsPerSecond: 2_000,
  restartMaxReconnectInMs: 5_000,
  restartTryForMs: 5_000,
  closeGraceMs: 2_000,
};

/**
 * The reconnect window of a Restarting frame for `clients` connections: at least restartReconnectInMs, wide
 * enough that their reconnects (uniform over the window) average restartReconnectsPerSecond, at most
 * restartMaxReconnectInMs.
 */
export function restartWindowMs(limits: DerpLimits, clients: number): number {
  const spread = Math.ceil((clients * 1000) / limits.restartReconnectsPerSecond);
  return Math.min(
    Math.max(limits.restartReconnectInMs, limits.restartMaxReconnectInMs),
    Math.max(limits.restartReconnectInMs, spread),
  );
}
