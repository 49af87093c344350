/**
 * The path selector's pacing and windows (path-selector.ts), in ms. The defaults meet the targets of
 * docs/ARCHITECTURE.md "Path selection": under traffic a direct path that goes silent loses its trust
 * within `trustMs` (2.5 s, under the 3 s fallback target) and the relay carries the traffic from then on;
 * when UDP comes back a candidate answers within `candidatePingMs` and the upgrade follows within a few
 * more pings (well under the 10 s target); idle peers ping at keepalive pace.
 */
import { TunnelError } from '../../errors.js';

export interface PathTimers {
  /** A peer with traffic (sent or received) within this window is active: fast pacing, short trust. */
  readonly activeMs: number;
  /** Ping the confirmed direct remote this often while active or confirming. */
  readonly directPingMs: number;
  /** Ping every other candidate this often while active or confirming and not direct. */
  readonly candidatePingMs: number;
  /** Ping other candidates this often while direct and active (background search for a better one). */
  readonly backgroundPingMs: number;
  /** Keepalive pace while idle, every target (NAT mappings commonly time out at 30 s). */
  readonly idlePingMs: number;
  /** A direct path is trusted for this long after its last pong while active (idle: idlePingMs longer). */
  readonly trustMs: number;
  /** A ping unanswered for this long is lost: the target's answer streak restarts. */
  readonly pingTimeoutMs: number;
  /** After new candidates (or a policy allowing UDP again), pace as if active for this long. */
  readonly confirmMs: number;
  /** Ping the peer over the relay this often while active (its RTT; idle: idlePingMs). */
  readonly relayPingMs: number;
  /** Direct for this long without a fallback: earlier fallbacks are forgotten (hysteresis resets). */
  readonly stableMs: number;
  /** Longest wait after a fallback before the direct path may be trusted again. */
  readonly holdDownMaxMs: number;
  /** Most extra consecutive answers required before trusting a path that fell back. */
  readonly maxExtraStreak: number;
  /** A peer-reflexive candidate (learned from the peer's pings) is forgotten this long after its last ping. */
  readonly peerReflexiveTtlMs: number;
}

export const DEFAULT_PATH_TIMERS: PathTimers = {
  activeMs: 10_000,
  directPingMs: 1_000,
  candidatePingMs: 2_000,
  backgroundPingMs: 30_000,
  idlePingMs: 25_000,
  trustMs: 2_500,
  pingTimeoutMs: 3_000,
  confirmMs: 5_000,
  relayPingMs: 5_000,
  stableMs: 30_000,
  holdDownMaxMs: 8_000,
  maxExtraStreak: 3,
  peerReflexiveTtlMs: 45_000,
};

/** The defaults with `overrides` applied; BAD_CONFIG naming a value that is not a positive integer. */
export function pathTimers(overrides: Partial<PathTimers> = {}): PathTimers {
  const t = { ...DEFAULT_PATH_TIMERS, ...overrides };
  for (const [name, v] of Object.entries(t)) {
    const zeroOk = name === 'maxExtraStreak';
    if (!Number.isInteger(v) || v < (zeroOk ? 0 : 1))
      throw new TunnelError(
        'BAD_CONFIG',
        `path timer ${name} = ${v}: expected a ${zeroOk ? 'non-negative' : 'positive'} integer`,
      );
  }
  return t;
}
