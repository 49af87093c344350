/**
 * Why a cluster PSK does not admit a registration, for the audit log only: the agent is told
 * BOOTSTRAP_REJECTED whatever the reason, so a caller cannot use the answer to probe PSKs.
 */
export type RegistrationRefusal = 'wrong' | 'used' | 'expired' | 'revoked';

export interface PskState {
  cluster: string;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

/** The state of a cluster's current PSK, for `cluster get`. */
export interface PskSummary {
  state: 'unused' | 'used' | 'expired' | 'revoked';
  expiresAt: number;
  usedAt: number | null;
}

/** The newest PSK of a cluster first: one still in force, else the latest by expiry (both stores). */
export const CURRENT_PSK_ORDER = 'ORDER BY (revoked_at IS NULL) DESC, expires_at DESC LIMIT 1';

export function pskSummary(psk: PskState, now: number): PskSummary {
  const refusal = pskRefusal(psk, { cluster: psk.cluster, now });
  const state = refusal === null ? 'unused' : refusal === 'wrong' ? 'revoked' : refusal;
  return {
    state,
    expiresAt: Number(psk.expires_at),
    usedAt: psk.used_at === null ? null : Number(psk.used_at),
  };
}

/** The refusal for this PSK row (a PSK of another cluster is `wrong`), or null when it admits `cluster` at `now`. */
export function pskRefusal(
  psk: PskState,
  attempt: { cluster: string; now: number },
): RegistrationRefusal | null {
  if (psk.cluster !== attempt.cluster) return 'wrong';
  if (psk.used_at !== null) return 'used';
  if (psk.revoked_at !== null) return 'revoked';
  if (psk.expires_at <= attempt.now) return 'expired';
  return null;
}
