import { createRequire } from 'node:module';
import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../keys.js';
import { BOX_MAC_LEN, boxSharedKey, naclDiscoBox, sodiumDiscoBox } from './disco-box.js';

interface SodiumBoxFns {
  crypto_box_easy(c: Uint8Array, m: Uint8Array, n: Uint8Array, pk: Uint8Array, sk: Uint8Array): void;
}
const sodium: SodiumBoxFns = createRequire(import.meta.url)('sodium-native');
const boxes = [naclDiscoBox, sodiumDiscoBox()].filter((b) => b !== null);

describe('disco box', () => {
  it('loads sodium-native here (so the agreement below compares two libraries)', () => {
    expect(boxes.map((b) => b.name)).toEqual(['tweetnacl', 'sodium-native']);
  });

  it('is crypto_box_easy: sodium-native, tweetnacl and both implementations agree byte for byte', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 400 }),
        fc.uint8Array({ minLength: 24, maxLength: 24 }),
        (msg, nonce) => {
          const a = generateKeyPair();
          const b = generateKeyPair();
          const viaSodium = Buffer.alloc(msg.length + BOX_MAC_LEN);
          sodium.crypto_box_easy(viaSodium, msg, nonce, b.publicKey, a.privateKey);
          const viaNacl = Buffer.from(nacl.box(msg, nonce, b.publicKey, a.privateKey));
          expect(viaNacl.equals(viaSodium)).toBe(true);
          const senderKey = boxSharedKey(b.publicKey, a.privateKey);
          const receiverKey = boxSharedKey(a.publicKey, b.privateKey);
          expect(senderKey.equals(receiverKey)).toBe(true);
          for (const box of boxes) {
            expect(box.seal(msg, nonce, senderKey).equals(viaSodium)).toBe(true);
            expect(box.open(viaSodium, nonce, receiverKey)?.equals(Buffer.from(msg))).toBe(true);
          }
        },
      ),
      { numRuns: 50 },
    );
  });

  it('refuses a box under another key, a flipped bit, or one shorter than its tag', () => {
    const a = generateKeyPair();
    const b = generateKeyPair();
    const c = generateKeyPair();
    const nonce = new Uint8Array(24).fill(7);
    for (const box of boxes) {
      const sealed = box.seal(Buffer.from('hello'), nonce, boxSharedKey(b.publicKey, a.privateKey));
      expect(box.open(sealed, nonce, boxSharedKey(a.publicKey, c.privateKey))).toBeNull();
      const flipped = Buffer.from(sealed);
      flipped[3] = (flipped[3] ?? 0) ^ 1;
      expect(box.open(flipped, nonce, boxSharedKey(a.publicKey, b.privateKey))).toBeNull();
      expect(box.open(sealed.subarray(0, 15), nonce, boxSharedKey(a.publicKey, b.privateKey))).toBeNull();
    }
  });
});
