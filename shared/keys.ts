/**
 * Curve25519 keys in the forms the wireguard tools use: 32 raw bytes, standard base64 (44 characters)
 * or lowercase hex (64 characters, the UAPI form). Key generation here uses tweetnacl; the wg CLI
 * wrapper (shared/wg-cli) prefers `wg genkey` when it is installed and is tested to agree.
 */
import nacl from 'tweetnacl';
import { TunnelError } from './errors.js';

export const KEY_LEN = 32;

export interface KeyPair {
  readonly privateKey: Buffer;
  readonly publicKey: Buffer;
}

/** Clamps a Curve25519 private key in place, as `wg genkey` does. */
export function clampPrivateKey(k: Uint8Array): Uint8Array {
  k[0] = k[0]! & 248;
  k[31] = (k[31]! & 127) | 64;
  return k;
}

export function publicKeyFromPrivate(privateKey: Uint8Array): Buffer {
  if (privateKey.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', 'private key must be 32 bytes');
  return Buffer.from(nacl.scalarMult.base(privateKey));
}

export function generateKeyPair(): KeyPair {
  const privateKey = Buffer.from(clampPrivateKey(nacl.randomBytes(KEY_LEN)));
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) };
}

/** 32 random bytes: WireGuard preshared keys (`wg genpsk`). */
export function generatePresharedKey(): Buffer {
  return Buffer.from(nacl.randomBytes(KEY_LEN));
}

const B64_KEY = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/**
 * Parses a key given as base64 (44 characters) or hex (64). `what` names the key in the error
 * (for example "peer public key"); the value itself is never echoed, since it may be a private key.
 */
export function parseKey(text: string, what = 'key'): Buffer {
  const s = text.trim();
  if (B64_KEY.test(s)) return Buffer.from(s, 'base64');
  if (HEX_KEY.test(s)) return Buffer.from(s, 'hex');
  throw new TunnelError(
    'KEY_INVALID',
    `${what} is not a WireGuard key: expected 44 characters of base64 or 64 hex digits, got ${s.length} characters`,
  );
}

/** p = 2^255 - 19, the field prime: a canonical u-coordinate is below it. */
const FIELD_PRIME = (1n << 255n) - 19n;
/**
 * A fixed clamped scalar (a multiple of 8, as every X25519 private key is). X25519 of it with a point is
 * all zero exactly when the point lies in the small subgroup of the curve (order 8) or of its twist
 * (order 4): the scalar clears both cofactors and is a multiple of neither large prime order (keys.test.ts
 * checks that).
 */
export const PROBE_SCALAR: Uint8Array = clampPrivateKey(new Uint8Array(KEY_LEN).fill(0x5a));

/**
 * Why 32 bytes are not a usable Curve25519 public key, or null when they are. Refused: a low-order point
 * (X25519 with it gives an all-zero secret, which WireGuard refuses, so no session can ever start) and a
 * non-canonical encoding (bit 255 set or a u-coordinate >= 2^255 - 19: X25519 never produces one, and
 * it would alias another key's point).
 */
export function publicKeyProblem(key: Uint8Array): string | null {
  if (key.length !== KEY_LEN) return `is ${key.length} bytes, not ${KEY_LEN}`;
  let u = 0n;
  for (let i = KEY_LEN - 1; i >= 0; i--) u = (u << 8n) | BigInt(key[i]!);
  if (u >= FIELD_PRIME) return 'is not a canonical Curve25519 encoding (u-coordinate >= 2^255 - 19)';
  const shared = nacl.scalarMult(PROBE_SCALAR, key);
  if (shared.every((b) => b === 0)) {
    return 'is a low-order Curve25519 point (X25519 with it gives an all-zero secret)';
  }
  return null;
}

/**
 * Parses a public key (parseKey) and refuses one that is not a usable Curve25519 point with
 * KEY_UNUSABLE. The message names the key in base64: public keys are not secret.
 */
export function parsePublicKey(text: string, what = 'public key'): Buffer {
  const key = parseKey(text, what);
  const problem = publicKeyProblem(key);
  if (problem !== null) {
    throw new TunnelError(
      'KEY_UNUSABLE',
      `${what} ${key.toString('base64')} ${problem}; generate a key pair with \`wg genkey\``,
    );
  }
  return key;
}

export function keyToBase64(key: Uint8Array): string {
  if (key.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', `key must be 32 bytes, got ${key.length}`);
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('base64');
}

export function keyToHex(key: Uint8Array): string {
  if (key.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', `key must be 32 bytes, got ${key.length}`);
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex');
}
