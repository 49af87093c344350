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
