/**
 * X25519 behind one small interface, three implementations, all tested to agree:
 * - sodium-native (libsodium): raw buffers, no key import at all; ephemeral key generation is ~4x
 *   cheaper than node:crypto's key import + export, DH costs the same. Preferred when it loads.
 * - node:crypto with KeyObjects (raw public keys imported as JWK, ~4x faster than DER); handles cache
 *   the imported objects so the static private key and each peer's public key are imported once.
 * - tweetnacl: the pure-JS fallback (~15x slower).
 * An all-zero shared secret (low-order peer key) is an error, as in wireguard-go.
 */
import { createPrivateKey, createPublicKey, diffieHellman, type KeyObject, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import nacl from 'tweetnacl';
import { TunnelError } from '../../../errors.js';
import { clampPrivateKey } from '../../../keys.js';

export interface PrivateKeyHandle {
  readonly raw: Buffer;
  readonly publicKey: Buffer;
  /** Implementation-specific cached object. */
  readonly obj?: unknown;
}
export interface PublicKeyHandle {
  readonly raw: Buffer;
  readonly obj?: unknown;
}

export interface X25519 {
  readonly name: 'sodium-native' | 'node:crypto' | 'tweetnacl';
  importPrivate(raw: Uint8Array): PrivateKeyHandle;
  importPublic(raw: Uint8Array): PublicKeyHandle;
  /** A fresh clamped key pair. */
  generate(): PrivateKeyHandle;
  /** Throws TunnelError WG_HANDSHAKE_FAILED when the result is all zeros or the key is unusable. */
  dh(priv: PrivateKeyHandle, pub: PublicKeyHandle): Buffer;
}

function check32(raw: Uint8Array, what: string): void {
  if (raw.length !== 32) throw new TunnelError('KEY_INVALID', `${what} must be 32 bytes, got ${raw.length}`);
}

function isZero(b: Uint8Array): boolean {
  let acc = 0;
  for (let i = 0; i < b.length; i++) acc |= b[i]!;
  return acc === 0;
}

function zeroSecret(): TunnelError {
  return new TunnelError(
    'WG_HANDSHAKE_FAILED',
    'X25519 produced an all-zero shared secret (low-order public key)',
  );
}

const b64u = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64url');

/** A clamped copy of a 32-byte private key; the caller's bytes stay as they are. */
function clampedCopy(raw: Uint8Array): Buffer {
  check32(raw, 'private key');
  const clamped = Buffer.from(raw);
  clampPrivateKey(clamped);
  return clamped;
}

class NodeX25519 implements X25519 {
  readonly name = 'node:crypto' as const;

  importPrivate(raw: Uint8Array): PrivateKeyHandle {
    const clamped = clampedCopy(raw);
    const der = Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), clamped]);
    const obj = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    const x = createPublicKey(obj).export({ format: 'jwk' }).x;
    return { raw: clamped, publicKey: Buffer.from(x ?? '', 'base64url'), obj };
  }

  importPublic(raw: Uint8Array): PublicKeyHandle {
    check32(raw, 'public key');
    try {
      const obj = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: b64u(raw) }, format: 'jwk' });
      return { raw: Buffer.from(raw), obj };
    } catch (err) {
      throw new TunnelError('KEY_INVALID', 'public key could not be imported', { cause: err });
    }
  }

  /**
   * 32 random bytes through importPrivate, not generateKeyPairSync: Node 20 can deadlock when a GC during
   * export({ format: 'jwk' }) of a freshly generated key destroys the generating job, whose destructor takes
   * the key's mutex that the export already holds (seen in wireguard-bench: the process hung for good in
   * KeyGenJob's destructor under ExportJWKEdKey). An imported key has no such job.
   */
  generate(): PrivateKeyHandle {
    return this.importPrivate(randomBytes(32));
  }

  dh(priv: PrivateKeyHandle, pub: PublicKeyHandle): Buffer {
    let out: Buffer;
    try {
      out = diffieHellman({ privateKey: priv.obj as KeyObject, publicKey: pub.obj as KeyObject });
    } catch {
      throw zeroSecret(); // OpenSSL refuses an all-zero result itself
    }
    if (isZero(out)) throw zeroSecret();
    return out;
  }
}

class NaclX25519 implements X25519 {
  readonly name = 'tweetnacl' as const;

  importPrivate(raw: Uint8Array): PrivateKeyHandle {
    const clamped = clampedCopy(raw);
    return { raw: clamped, publicKey: Buffer.from(nacl.scalarMult.base(clamped)) };
  }

  importPublic(raw: Uint8Array): PublicKeyHandle {
    check32(raw, 'public key');
    return { raw: Buffer.from(raw) };
  }

  generate(): PrivateKeyHandle {
    return this.importPrivate(nacl.randomBytes(32));
  }

  dh(priv: PrivateKeyHandle, pub: PublicKeyHandle): Buffer {
    const out = Buffer.from(nacl.scalarMult(priv.raw, pub.raw));
    if (isZero(out)) throw zeroSecret();
    return out;
  }
}

interface SodiumScalarFns {
  crypto_scalarmult(q: Uint8Array, n: Uint8Array, p: Uint8Array): void;
  crypto_scalarmult_base(q: Uint8Array, n: Uint8Array): void;
  randombytes_buf(b: Uint8Array): void;
}

class SodiumX25519 implements X25519 {
  readonly name = 'sodium-native' as const;
  readonly #sodium: SodiumScalarFns;

  constructor(sodiumNative: SodiumScalarFns) {
    this.#sodium = sodiumNative;
  }

  importPrivate(raw: Uint8Array): PrivateKeyHandle {
    const clamped = clampedCopy(raw);
    const publicKey = Buffer.alloc(32);
    this.#sodium.crypto_scalarmult_base(publicKey, clamped);
    return { raw: clamped, publicKey };
  }

  importPublic(raw: Uint8Array): PublicKeyHandle {
    check32(raw, 'public key');
    return { raw: Buffer.from(raw) };
  }

  generate(): PrivateKeyHandle {
    const k = Buffer.alloc(32);
    this.#sodium.randombytes_buf(k);
    return this.importPrivate(k);
  }

  dh(priv: PrivateKeyHandle, pub: PublicKeyHandle): Buffer {
    const out = Buffer.alloc(32);
    try {
      this.#sodium.crypto_scalarmult(out, priv.raw, pub.raw); // libsodium refuses an all-zero result
    } catch {
      throw zeroSecret();
    }
    if (isZero(out)) throw zeroSecret();
    return out;
  }
}

let sodium: X25519 | null | undefined;

/** The sodium-native implementation, or null when the addon does not load. */
export function sodiumX25519(): X25519 | null {
  if (sodium === undefined) {
    try {
      sodium = new SodiumX25519(createRequire(import.meta.url)('sodium-native') as SodiumScalarFns);
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

export const nodeX25519: X25519 = new NodeX25519();
export const naclX25519: X25519 = new NaclX25519();

let chosen: X25519 | undefined;

/** sodium-native when it loads, else node:crypto when it supports X25519 KeyObjects, else tweetnacl. */
export function defaultX25519(): X25519 {
  if (!chosen) {
    chosen = sodiumX25519() ?? undefined;
    if (chosen) return chosen;
    try {
      const a = nodeX25519.generate();
      const b = nodeX25519.generate();
      nodeX25519.dh(a, nodeX25519.importPublic(b.publicKey));
      chosen = nodeX25519;
    } catch {
      chosen = naclX25519;
    }
  }
  return chosen;
}
