/**
 * One-time install links: `GET /api/v1/install/<token>` answers a cluster's agent manifests with its
 * bootstrap PSK inside, once. The token is a bearer secret like the others (`tin_` and 32 random bytes,
 * relay/ops/secrets.ts); the store keeps its SHA-256 (the lookup key) and the PSK sealed with
 * ChaCha20-Poly1305 under a key derived from the token by HKDF-SHA256, bound to the cluster and PSK id.
 * So the store alone (a backup, a database dump) yields neither the token nor the PSK, and the relay
 * can open the PSK only while a caller presents the token. Fetching the link consumes it in the same
 * transaction that reads it (single use under concurrency); it ends with its PSK (expiry, rotation, use).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { hashSecret, newSecret } from '../../ops/secrets.js';
import type { NewInstallLink } from '../store/types.js';

const INFO = 'tunnel-relay install link psk v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(token: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(token, 'utf8'), Buffer.alloc(0), INFO, 32));
}

function aadOf(cluster: string, pskId: string): Buffer {
  return Buffer.from(`${cluster}\n${pskId}`, 'utf8');
}

export interface IssuedInstallLink {
  /** The bearer token (shown once, in the URL). */
  token: string;
  /** What the store keeps. */
  record: NewInstallLink;
}

/** A new link for `psk` (its id `pskId`) of `cluster`. */
export function issueInstallLink(cluster: string, pskId: string, psk: string): IssuedInstallLink {
  const token = newSecret('install');
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('chacha20-poly1305', keyOf(token), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aadOf(cluster, pskId), { plaintextLength: Buffer.byteLength(psk) });
  const sealed = Buffer.concat([nonce, cipher.update(psk, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { token, record: { hash: hashSecret(token), sealed: sealed.toString('base64url') } };
}

/** The PSK sealed in a link, opened with its token; null when the token or binding does not match. */
export function openInstallLink(
  token: string,
  link: { cluster: string; pskId: string; sealed: string },
): string | null {
  const raw = Buffer.from(link.sealed, 'base64url');
  if (raw.length <= NONCE_BYTES + TAG_BYTES) return null;
  const decipher = createDecipheriv('chacha20-poly1305', keyOf(token), raw.subarray(0, NONCE_BYTES), {
    authTagLength: TAG_BYTES,
  });
  const body = raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES);
  decipher.setAAD(aadOf(link.cluster, link.pskId), { plaintextLength: body.length });
  decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
