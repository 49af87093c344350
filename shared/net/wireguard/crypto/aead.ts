/**
 * ChaCha20-Poly1305 (RFC 8439) behind one small interface, with three implementations:
 * - `openssl`: the optional addon in native/openssl-aead (built by `npm ci` where a C compiler and Node's
 *   headers are present), which runs the OpenSSL that Node.js is linked with on the caller's buffers: about
 *   twice the speed of libsodium at 16-64 KiB on CPUs with AVX-512, 1.5x at 1,420 B (docs/BENCHMARKS.md);
 * - `sodium-native` (libsodium, prebuilt in its npm package);
 * - `node:crypto` (always available; a cipher object and an output buffer per call).
 * `defaultAead()` takes the first that loads in that order; TUNNEL_WG_AEAD names one instead.
 *
 * Nonce layout used by WireGuard (12 bytes): 00 00 00 00 || u64 LE counter.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { createRequire } from 'node:module';
import { TunnelError } from '../../../errors.js';

export const AEAD_KEY_LEN = 32;
export const AEAD_NONCE_LEN = 12;
export const AEAD_TAG_LEN = 16;

export const AEAD_NAMES = ['openssl', 'sodium-native', 'node:crypto'] as const;
export type AeadName = (typeof AEAD_NAMES)[number];

export interface Aead {
  readonly name: AeadName;
  /**
   * Encrypts `plaintext` into `out` as ciphertext || 16-byte tag (`plaintext.length + 16` bytes).
   * `out` must not overlap `plaintext` unless it is the same start address (in-place).
   * Returns the number of bytes written.
   */
  seal(out: Uint8Array, key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array, aad?: Uint8Array): number;
  /**
   * Decrypts `ciphertext` (ciphertext || tag) into `out` (at least `ciphertext.length - 16` bytes).
   * Returns the plaintext length, or -1 when the tag does not verify (or the input is shorter than a tag);
   * then the bytes of `out` are unspecified (an implementation may decrypt while it checks the tag).
   */
  open(out: Uint8Array, key: Uint8Array, nonce: Uint8Array, ciphertext: Uint8Array, aad?: Uint8Array): number;
  /**
   * Present where one native call seals a run (the OpenSSL addon): builds each of `datagrams` (a whole
   * WireGuard transport datagram: 16-byte header, padded plaintext in place, 16 bytes for the tag) by
   * writing its header (receiverIndex, counter firstCounter + i) and sealing its plaintext in place under that
   * counter's nonce. Returns datagrams.length. See shared/net/wireguard/transport.ts sealTransportRun.
   */
  sealTransports?(
    key: Uint8Array,
    receiverIndex: number,
    firstCounter: number,
    datagrams: Uint8Array[],
  ): number;
}

/** Writes the WireGuard nonce for `counter` into a 12-byte buffer. */
export function writeNonce(nonce: Buffer, counter: bigint): Buffer {
  nonce.writeUInt32LE(0, 0);
  nonce.writeBigUInt64LE(counter, 4);
  return nonce;
}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

class NodeAead implements Aead {
  readonly name = 'node:crypto' as const;

  seal(out: Uint8Array, key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array, aad?: Uint8Array): number {
    const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: AEAD_TAG_LEN });
    if (aad) c.setAAD(aad, { plaintextLength: plaintext.length });
    const body = c.update(plaintext);
    c.final();
    const o = asBuffer(out);
    body.copy(o, 0);
    c.getAuthTag().copy(o, body.length);
    return body.length + AEAD_TAG_LEN;
  }

  open(
    out: Uint8Array,
    key: Uint8Array,
    nonce: Uint8Array,
    ciphertext: Uint8Array,
    aad?: Uint8Array,
  ): number {
    const n = ciphertext.length - AEAD_TAG_LEN;
    if (n < 0) return -1;
    const d = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: AEAD_TAG_LEN });
    d.setAuthTag(ciphertext.subarray(n));
    if (aad) d.setAAD(aad, { plaintextLength: n });
    const body = d.update(ciphertext.subarray(0, n));
    try {
      d.final();
    } catch {
      return -1;
    }
    body.copy(asBuffer(out), 0);
    return n;
  }
}

interface SodiumAeadFns {
  crypto_aead_chacha20poly1305_ietf_encrypt(
    c: Uint8Array,
    m: Uint8Array,
    ad: Uint8Array | null,
    nsec: null,
    npub: Uint8Array,
    k: Uint8Array,
  ): number;
  crypto_aead_chacha20poly1305_ietf_decrypt(
    m: Uint8Array,
    nsec: null,
    c: Uint8Array,
    ad: Uint8Array | null,
    npub: Uint8Array,
    k: Uint8Array,
  ): number;
}

class SodiumAead implements Aead {
  readonly name = 'sodium-native' as const;
  readonly #sodium: SodiumAeadFns;

  constructor(sodiumNative: SodiumAeadFns) {
    this.#sodium = sodiumNative;
  }

  seal(out: Uint8Array, key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array, aad?: Uint8Array): number {
    const len = plaintext.length + AEAD_TAG_LEN;
    return this.#sodium.crypto_aead_chacha20poly1305_ietf_encrypt(
      out.length === len ? out : out.subarray(0, len),
      plaintext,
      aad ?? null,
      null,
      nonce,
      key,
    );
  }

  open(
    out: Uint8Array,
    key: Uint8Array,
    nonce: Uint8Array,
    ciphertext: Uint8Array,
    aad?: Uint8Array,
  ): number {
    const n = ciphertext.length - AEAD_TAG_LEN;
    if (n < 0) return -1;
    try {
      return this.#sodium.crypto_aead_chacha20poly1305_ietf_decrypt(
        out.length === n ? out : out.subarray(0, n),
        null,
        ciphertext,
        aad ?? null,
        nonce,
        key,
      );
    } catch {
      return -1;
    }
  }
}

export const nodeAead: Aead = new NodeAead();

/**
 * The addon's functions (native/openssl-aead/src/openssl-aead.c) already have the Aead signatures (an
 * undefined aad is no aad) and use no `this`, so they serve as the implementation directly.
 */
type OpensslAeadFns = Pick<Aead, 'seal' | 'open' | 'sealTransports'>;

let sodium: Aead | null | undefined;
let openssl: Aead | null | undefined;
/** Why the addon did not load (for the error when TUNNEL_WG_AEAD asks for it). */
let opensslWhy = '';

/** The sodium-native implementation, or null when the addon does not load on this machine. */
export function sodiumAead(): Aead | null {
  if (sodium === undefined) {
    try {
      const req = createRequire(import.meta.url);
      sodium = new SodiumAead(req('sodium-native') as SodiumAeadFns);
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

/** The OpenSSL addon (native/openssl-aead), or null when it was not built or does not load here. */
export function opensslAead(): Aead | null {
  if (openssl === undefined) {
    try {
      const req = createRequire(import.meta.url);
      const fns = req('@wg-relay-tunnel/openssl-aead') as OpensslAeadFns;
      // An addon built before sealTransports existed still serves: the run is then sealed one call a datagram.
      openssl = fns.sealTransports
        ? { name: 'openssl', seal: fns.seal, open: fns.open, sealTransports: fns.sealTransports }
        : { name: 'openssl', seal: fns.seal, open: fns.open };
    } catch (err) {
      openssl = null;
      opensslWhy = (err as { code?: string }).code ?? 'load failed';
    }
  }
  return openssl;
}

/**
 * The implementation named by `choice` (TUNNEL_WG_AEAD), else the fastest that loads: the OpenSSL addon,
 * then sodium-native, then node:crypto. Throws BAD_CONFIG for an unknown name or one that does not load.
 */
export function defaultAead(choice = process.env.TUNNEL_WG_AEAD): Aead {
  if (!choice) return opensslAead() ?? sodiumAead() ?? nodeAead;
  if (!(AEAD_NAMES as readonly string[]).includes(choice)) {
    throw new TunnelError(
      'BAD_CONFIG',
      `TUNNEL_WG_AEAD '${choice}' is not an AEAD implementation; expected one of ${AEAD_NAMES.join(', ')}`,
    );
  }
  const picked = choice === 'openssl' ? opensslAead() : choice === 'sodium-native' ? sodiumAead() : nodeAead;
  if (!picked) {
    const why = choice === 'openssl' ? ` (${opensslWhy}; it is built by npm ci with a C compiler)` : '';
    throw new TunnelError(
      'BAD_CONFIG',
      `TUNNEL_WG_AEAD '${choice}': that implementation does not load here${why}`,
    );
  }
  return picked;
}
