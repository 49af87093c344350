import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from './errors.js';
import { generateKeyPair, keyToBase64, keyToHex, parseKey, publicKeyFromPrivate } from './keys.js';

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
});
