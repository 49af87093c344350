/**
 * WireGuard's hash primitives (reference §2):
 * HASH = BLAKE2s-256; HMAC = RFC 2104 HMAC-BLAKE2s-256 (only for the KDF);
 * MAC = keyed BLAKE2s with a 16-byte output (key in the parameter block, NOT HMAC);
 * KDF1/2/3 = HKDF over HMAC; XAEAD = XChaCha20-Poly1305 (cookie replies only).
 */
import { createHash, createHmac } from 'node:crypto';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { blake2s } from '@noble/hashes/blake2.js';

export const HASH_LEN = 32;
export const MAC_LEN = 16;

/** HASH(a || b || ...) with BLAKE2s-256. */
export function hash(...parts: Uint8Array[]): Buffer {
  const h = createHash('blake2s256');
  for (const p of parts) h.update(p);
  return h.digest();
}

export function hmac(key: Uint8Array, ...parts: Uint8Array[]): Buffer {
  const h = createHmac('blake2s256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

const ONE = Uint8Array.of(1);
const TWO = Uint8Array.of(2);
const THREE = Uint8Array.of(3);

export function kdf1(key: Uint8Array, input: Uint8Array): Buffer {
  return hmac(hmac(key, input), ONE);
}

export function kdf2(key: Uint8Array, input: Uint8Array): [Buffer, Buffer] {
  const prk = hmac(key, input);
  const t1 = hmac(prk, ONE);
  return [t1, hmac(prk, t1, TWO)];
}

export function kdf3(key: Uint8Array, input: Uint8Array): [Buffer, Buffer, Buffer] {
  const prk = hmac(key, input);
  const t1 = hmac(prk, ONE);
  const t2 = hmac(prk, t1, TWO);
  return [t1, t2, hmac(prk, t2, THREE)];
}

/** MAC(key, msg): keyed BLAKE2s-128. */
export function mac(key: Uint8Array, msg: Uint8Array): Uint8Array {
  return blake2s(msg, { key, dkLen: MAC_LEN });
}

export const XAEAD_NONCE_LEN = 24;

export function xaeadSeal(
  key: Uint8Array,
  nonce: Uint8Array,
  plaintext: Uint8Array,
  aad: Uint8Array,
): Uint8Array {
  return xchacha20poly1305(key, nonce, aad).encrypt(plaintext);
}

/** Returns the plaintext, or null when the tag does not verify. */
export function xaeadOpen(
  key: Uint8Array,
  nonce: Uint8Array,
  ciphertext: Uint8Array,
  aad: Uint8Array,
): Uint8Array | null {
  try {
    return xchacha20poly1305(key, nonce, aad).decrypt(ciphertext);
  } catch {
    return null;
  }
}
