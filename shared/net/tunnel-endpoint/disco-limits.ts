/**
 * What one peer's disco messages may make this node do, per peer (docs/LIMITS.md "Disco"). A call-me-maybe is a
 * peer's claim that it can be reached at some addresses; answering each one by pinging every listed address at
 * once would let any admitted peer aim our UDP port at anyone. So, per peer:
 * - call-me-maybe handling: `callMeMaybeBurst` at once, then one every `callMeMaybeIntervalMs`; the excess is
 *   dropped and counted (`rate-limited`). A peer sends one on start, when its candidates or its probing change,
 *   and every 60 s; the one it sends at its next change or refresh is handled.
 * - new candidates (addresses not held yet, from call-me-maybe or where the peer's pings came from):
 *   `newCandidateBurst` at once, then one every `newCandidateIntervalMs`; more are left out and counted (`churn`).
 * - pings to candidates that never answered: `unconfirmedPingBurst` at once, then one every
 *   `unconfirmedPingIntervalMs`; a ping that finds no token waits for the next one. Pings to an address that
 *   answered (the peer's key sealed the pong, so the peer is there) and to configured addresses are not limited.
 * Each is a token bucket (shared/token-bucket.ts): over any T ms at most burst + T / interval.
 */
import { TunnelError } from '../../errors.js';

export interface DiscoLimits {
  readonly callMeMaybeBurst: number;
  readonly callMeMaybeIntervalMs: number;
  readonly newCandidateBurst: number;
  readonly newCandidateIntervalMs: number;
  readonly unconfirmedPingBurst: number;
  readonly unconfirmedPingIntervalMs: number;
}

/**
 * The defaults: 8 call-me-maybes at once then one per 5 s; 32 new candidates at once then 30 a minute; 16 pings
 * to unconfirmed candidates at once (a whole call-me-maybe's list) then 4 a second.
 */
export const DEFAULT_DISCO_LIMITS: DiscoLimits = {
  callMeMaybeBurst: 8,
  callMeMaybeIntervalMs: 5_000,
  newCandidateBurst: 32,
  newCandidateIntervalMs: 2_000,
  unconfirmedPingBurst: 16,
  unconfirmedPingIntervalMs: 250,
};

/** The defaults with `overrides` applied; BAD_CONFIG naming a value that is not a positive integer. */
export function discoLimits(overrides: Partial<DiscoLimits> = {}): DiscoLimits {
  const limits = { ...DEFAULT_DISCO_LIMITS, ...overrides };
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1)
      throw new TunnelError('BAD_CONFIG', `disco limit ${name} = ${v}: expected a positive integer`);
  }
  return limits;
}
