/**
 * Bearer secrets: a kind prefix (so logs and scanners can recognise them) then 32 random bytes in
 * base64url. The relay keeps only the SHA-256 hex of a secret; lookups go by hash, so no secret
 * comparison happens in JavaScript.
 */
import { createHash, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = {
  accessKey: 'trk_',
  psk: 'tpsk_',
  agent: 'tac_',
  install: 'tin_',
} as const;
export type SecretKind = keyof typeof SECRET_PREFIX;

const BODY = /^[A-Za-z0-9_-]{43}$/;

export function newSecret(kind: SecretKind): string {
  return SECRET_PREFIX[kind] + randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Which kind of secret `text` looks like, or null if it is none of ours (checked by shape only). */
export function secretKind(text: string): SecretKind | null {
  for (const kind of Object.keys(SECRET_PREFIX) as SecretKind[]) {
    const p = SECRET_PREFIX[kind];
    if (text.startsWith(p) && BODY.test(text.slice(p.length))) return kind;
  }
  return null;
}

/** A short public identifier (for key ids, PSK ids). */
export function newId(prefix: string): string {
  return prefix + randomBytes(8).toString('hex');
}

/** Every substring that looks like one of our secrets, replaced by `<kind-prefix>[REDACTED]`. */
export function redactSecrets(text: string): string {
  return text.replace(/(trk_|tpsk_|tac_|tin_)[A-Za-z0-9_-]{8,}/g, '$1[REDACTED]');
}
