/**
 * The shape of what `tunnel-client join --psk` takes: a cluster PSK (`tpsk_`) or an org-wide bootstrap
 * key (`trk_`), each the prefix then 32 random bytes in base64url (43 characters), as relay/ops/secrets.ts
 * makes them. Checked locally so a mistyped or truncated value fails at once (BAD_INPUT) instead of
 * spending a request and counting as a failed registration against this source.
 */
import { TunnelError } from '../errors.js';

const PREFIXES = ['tpsk_', 'trk_'] as const;
const BODY = /^[A-Za-z0-9_-]{43}$/;
const BODY_LENGTH = 43;

/** What is wrong with `text` as a bootstrap credential (never quoting it), or null when its shape is valid. */
export function bootstrapSecretProblem(text: string): string | null {
  const prefix = PREFIXES.find((p) => text.startsWith(p));
  if (prefix === undefined) {
    return `it does not start with tpsk_ (cluster PSK) or trk_ (bootstrap key)`;
  }
  const body = text.slice(prefix.length);
  if (body.length !== BODY_LENGTH) {
    return `a ${prefix} value has ${BODY_LENGTH} characters after the prefix, this one has ${body.length} (truncated or extra text?)`;
  }
  if (!BODY.test(body)) return `it has characters outside base64url (A-Z a-z 0-9 - _) after ${prefix}`;
  return null;
}

/** Throws BAD_INPUT naming `flag` and the problem (not the secret) when `text` is not a bootstrap credential. */
export function checkBootstrapSecret(text: string, flag: string): string {
  const problem = bootstrapSecretProblem(text);
  if (problem !== null) {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} is not a bootstrap PSK: ${problem}; copy it again from the join command that ` +
        '`tunnel-relay cluster create` or `cluster rotate-psk` printed',
    );
  }
  return text;
}
