/**
 * WireGuard protocol constants (reference §1) and the engine's default timers and caps.
 * Every threshold the state machine uses is in WireGuardTimers so tests can shorten it.
 */

export const CONSTRUCTION = 'Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s';
export const IDENTIFIER = 'WireGuard v1 zx2c4 Jason@zx2c4.com';
export const LABEL_MAC1 = 'mac1----';
export const LABEL_COOKIE = 'cookie--';

export const PADDING_MULTIPLE = 16;
export const DEFAULT_MTU = 1420;
/** Largest inner packet the engine accepts as an MTU (relay paths carry up to this). */
export const MAX_MTU = 65535;

/** Time and message thresholds (reference §1, §9). Times in milliseconds. */
export interface WireGuardTimers {
  rekeyAfterMessages: bigint;
  rejectAfterMessages: bigint;
  rekeyAfterTime: number;
  rejectAfterTime: number;
  rekeyAttemptTime: number;
  rekeyTimeout: number;
  /** Upper bound (exclusive) of the random jitter added to RekeyTimeout: 0..333 ms. */
  rekeyTimeoutJitterMax: number;
  keepaliveTimeout: number;
  cookieRefreshTime: number;
  /** Minimum gap between two initiations consumed from the same peer (flood check). */
  handshakeInitiationRate: number;
  /** Retries before giving up: RekeyAttemptTime / RekeyTimeout = 18. */
  maxTimerHandshakes: number;
}

export const DEFAULT_TIMERS: Readonly<WireGuardTimers> = Object.freeze({
  rekeyAfterMessages: 1n << 60n,
  rejectAfterMessages: (1n << 64n) - (1n << 13n) - 1n,
  rekeyAfterTime: 120_000,
  rejectAfterTime: 180_000,
  rekeyAttemptTime: 90_000,
  rekeyTimeout: 5_000,
  rekeyTimeoutJitterMax: 334,
  keepaliveTimeout: 10_000,
  cookieRefreshTime: 120_000,
  handshakeInitiationRate: 20,
  maxTimerHandshakes: 18,
});

/** Caps (docs/LIMITS.md). */
export const DEFAULT_MAX_PEERS = 1024;
/** Upper bound for the maxPeers option (wireguard-go's MaxPeers). */
export const MAX_PEERS_LIMIT = 65536;
/** Staged (waiting for a session) packets per peer; the oldest is dropped past this (QueueStagedSize). */
export const DEFAULT_MAX_STAGED = 128;
/** Index table entries per peer: one handshake + previous/current/next keypairs. */
export const INDICES_PER_PEER = 4;
/** Handshake messages per second above which the device counts as under load (mac2 enforced for 1 s). */
export const UNDER_LOAD_HANDSHAKES_PER_SECOND = 128;
export const UNDER_LOAD_AFTER_TIME = 1_000;
/** Per-source handshake rate limit under load: 20/s, burst 5; sources tracked at most: */
export const RATE_LIMIT_PER_SECOND = 20;
export const RATE_LIMIT_BURST = 5;
export const RATE_LIMIT_MAX_SOURCES = 4096;
