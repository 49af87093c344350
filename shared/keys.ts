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

export function keyToBase64(key: Uint8Array): string {
  if (key.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', `key must be 32 bytes, got ${key.length}`);
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('base64');
}

export function keyToHex(key: Uint8Array): string {
  if (key.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', `key must be 32 bytes, got ${key.length}`);
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex');
}
