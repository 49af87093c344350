import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from './errors.js';
import {
  generateKeyPair,
  keyToBase64,
  keyToHex,
  PROBE_SCALAR,
  parseKey,
  parsePublicKey,
  publicKeyFromPrivate,
  publicKeyProblem,
} from './keys.js';

/** The low-order encodings libsodium refuses (crypto_scalarmult/curve25519/ref10, `blacklist`). */
const LOW_ORDER_HEX = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800',
  '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'cdeb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880',
  '4c9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7',
  'd9ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
  'daffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
  'dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
];
const P = (1n << 255n) - 19n;
const L = (1n << 252n) + 27742317777372353535851937790883648493n;
const littleEndian = (b: Uint8Array) => b.reduceRight((acc, x) => (acc << 8n) | BigInt(x), 0n);
const toKey = (u: bigint) => {
  const out = Buffer.alloc(32);
  for (let i = 0; i < 32; i++) out[i] = Number((u >> BigInt(8 * i)) & 255n);
  return out;
};

describe('keys', () => {
  it('round-trips base64 and hex forms', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (raw) => {
        expect(parseKey(keyToBase64(raw)).equals(Buffer.from(raw))).toBe(true);
        expect(parseKey(keyToHex(raw)).equals(Buffer.from(raw))).toBe(true);
      }),
    );
  });

  it('derives the public key of a known vector (RFC 7748 section 6.1, Alice)', () => {
    const priv = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex');
    expect(publicKeyFromPrivate(priv).toString('hex')).toBe(
      '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a',
    );
  });

  it('generates clamped keys', () => {
    const { privateKey, publicKey } = generateKeyPair();
    expect(privateKey[0]! & 7).toBe(0);
    expect(privateKey[31]! & 0xc0).toBe(0x40);
    expect(publicKeyFromPrivate(privateKey).equals(publicKey)).toBe(true);
  });

  it('rejects anything else with KEY_INVALID, without echoing the value', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (s) => {
        try {
          const k = parseKey(s, 'private key');
          expect(k.length).toBe(32);
        } catch (e) {
          expect(isTunnelError(e, 'KEY_INVALID')).toBe(true);
          if (s.trim().length > 3) expect((e as Error).message).not.toContain(s.trim());
        }
      }),
    );
  });

  it('the probe scalar clears both cofactors and is a multiple of neither large prime order', () => {
    const n = littleEndian(PROBE_SCALAR);
    // Curve order 8L = p + 1 - t, so the twist's order p + 1 + t = 2(p + 1) - 8L = 4L'.
    const twistPrime = (2n * (P + 1n) - 8n * L) / 4n;
    expect(n % 8n).toBe(0n);
    expect(n % L).not.toBe(0n);
    expect(n % twistPrime).not.toBe(0n);
  });

  it('refuses every low-order encoding, naming the key with KEY_UNUSABLE', () => {
    for (const hex of LOW_ORDER_HEX) {
      const key = Buffer.from(hex, 'hex');
      expect(publicKeyProblem(key), hex).not.toBeNull();
      const b64 = key.toString('base64');
      expect(() => parsePublicKey(b64, 'publicKey')).toThrow(
        expect.objectContaining({ code: 'KEY_UNUSABLE' }),
      );
      expect(() => parsePublicKey(hex, 'publicKey')).toThrow(b64);
    }
  });

  it('property: a generated public key is accepted; a non-canonical u (>= p) is refused', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (seed) => {
        const pub = publicKeyFromPrivate(Buffer.from(seed));
        expect(publicKeyProblem(pub)).toBeNull();
        expect(parsePublicKey(keyToBase64(pub)).equals(pub)).toBe(true);
        // The same point with bit 255 set: X25519 ignores the bit, so it would alias `pub`.
        const alias = Buffer.from(pub);
        alias[31] = alias[31]! | 0x80;
        expect(publicKeyProblem(alias)).toMatch(/canonical/);
      }),
      { numRuns: 50 },
    );
    fc.assert(
      fc.property(fc.bigInt({ min: P, max: (1n << 256n) - 1n }), (u) => {
        expect(publicKeyProblem(toKey(u))).toMatch(/canonical/);
      }),
    );
  });

  it('property: the check agrees with X25519 under a random private key', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (raw, priv) => {
          const key = Buffer.from(raw);
          key[31] = key[31]! & 0x7f;
          if (littleEndian(key) >= P) return;
          const zero = nacl.scalarMult(priv, key).every((b) => b === 0);
          // Random bytes are a low-order point with negligible probability: both say usable.
          expect(publicKeyProblem(key) === null).toBe(!zero);
        },
      ),
      { numRuns: 50 },
    );
  });
});
