/**
 * NaCl box (Curve25519 + XSalsa20-Poly1305) between two WireGuard static keys, for disco messages
 * (disco-codec.ts). The X25519 + HSalsa20 step (`crypto_box_beforenm`) runs once per peer and is cached
 * (shared-key-cache.ts); each message is then a secretbox under that key with a random 24-byte nonce, which
 * is exactly `crypto_box_easy` (disco-box.test.ts checks sodium-native's crypto_box_easy, tweetnacl's box and
 * both implementations here agree byte for byte).
 *
 * sodium-native (libsodium) seals and opens when it loads; tweetnacl otherwise. sodium-native exposes no
 * `crypto_box_beforenm`, so the precomputation is tweetnacl's `box.before` for both.
 */
import { createRequire } from 'node:module';
import nacl from 'tweetnacl';

/** Bytes of a box's Poly1305 tag, in front of the ciphertext. */
export const BOX_MAC_LEN = 16;
export const BOX_NONCE_LEN = 24;
export const BOX_KEY_LEN = 32;

export interface DiscoBox {
  readonly name: 'sodium-native' | 'tweetnacl';
  /** tag(16) | ciphertext, under a precomputed key. */
  seal(plaintext: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer;
  /** The plaintext, or null when the tag does not verify (or the box is shorter than a tag). */
  open(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer | null;
}

/** `crypto_box_beforenm(peerPublic, ownPrivate)`: the key both sides derive for their pair. */
export function boxSharedKey(peerPublic: Uint8Array, ownPrivate: Uint8Array): Buffer {
  return Buffer.from(nacl.box.before(peerPublic, ownPrivate));
}

interface SodiumSecretboxFns {
  crypto_secretbox_easy(c: Uint8Array, m: Uint8Array, n: Uint8Array, k: Uint8Array): void;
  crypto_secretbox_open_easy(m: Uint8Array, c: Uint8Array, n: Uint8Array, k: Uint8Array): boolean;
}

class SodiumDiscoBox implements DiscoBox {
  readonly name = 'sodium-native' as const;
  readonly #sodium: SodiumSecretboxFns;

  constructor(s: SodiumSecretboxFns) {
    this.#sodium = s;
  }

  seal(plaintext: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer {
    const out = Buffer.alloc(plaintext.length + BOX_MAC_LEN);
    this.#sodium.crypto_secretbox_easy(out, plaintext, nonce, key);
    return out;
  }

  open(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer | null {
    if (box.length < BOX_MAC_LEN) return null;
    const out = Buffer.alloc(box.length - BOX_MAC_LEN);
    return this.#sodium.crypto_secretbox_open_easy(out, box, nonce, key) ? out : null;
  }
}

class NaclDiscoBox implements DiscoBox {
  readonly name = 'tweetnacl' as const;

  seal(plaintext: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer {
    return Buffer.from(nacl.secretbox(plaintext, nonce, key));
  }

  open(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer | null {
    if (box.length < BOX_MAC_LEN) return null;
    const out = nacl.secretbox.open(box, nonce, key);
    return out ? Buffer.from(out) : null;
  }
}

export const naclDiscoBox: DiscoBox = new NaclDiscoBox();

let sodium: DiscoBox | null | undefined;

/** The sodium-native implementation, or null when the addon does not load. */
export function sodiumDiscoBox(): DiscoBox | null {
  if (sodium === undefined) {
    try {
      sodium = new SodiumDiscoBox(createRequire(import.meta.url)('sodium-native') as SodiumSecretboxFns);
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

/** sodium-native when it loads, else tweetnacl. */
export function defaultDiscoBox(): DiscoBox {
  return sodiumDiscoBox() ?? naclDiscoBox;
}
