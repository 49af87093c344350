import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64, publicKeyFromPrivate } from '../../../shared/keys.js';
import { agentPublicKey, MAX_RESERVED_KEYS, ReservedKeys } from './reserved-keys.js';

const hub = generateKeyPair().publicKey;

describe('ReservedKeys', () => {
  it('recognises a reserved key as bytes, base64 or hex, and nothing else', () => {
    const r = new ReservedKeys([hub]);
    expect(r.has(hub)).toBe(true);
    expect(r.has(hub.toString('base64'))).toBe(true);
    expect(r.has(hub.toString('hex'))).toBe(true);
    expect(r.has(hub.toString('hex').toUpperCase())).toBe(true);
    expect(r.has(generateKeyPair().publicKey)).toBe(false);
    expect(r.has(hub.subarray(0, 31))).toBe(false);
    expect(r.has('')).toBe(false);
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        expect(r.has(s)).toBe(false);
      }),
    );
  });

  it(`holds at most ${MAX_RESERVED_KEYS} keys (one per replica)`, () => {
    const r = new ReservedKeys();
    for (let i = 0; i < MAX_RESERVED_KEYS; i++) {
      const k = Buffer.alloc(32);
      k.writeUInt32LE(i + 1);
      r.add(k);
    }
    const first = Buffer.alloc(32);
    first.writeUInt32LE(1);
    r.add(first); // already held: no change
    expect(r.size).toBe(MAX_RESERVED_KEYS);
    expect(() => r.add(hub)).toThrow(expect.objectContaining({ code: 'LIMIT_EXCEEDED' }));
  });
});

describe('agentPublicKey', () => {
  const reserved = new ReservedKeys([hub]);

  it('refuses the hub key in any form with KEY_RESERVED, naming it', () => {
    for (const form of [hub.toString('base64'), hub.toString('hex'), ` ${hub.toString('base64')}\n`]) {
      expect(() => agentPublicKey(form, reserved)).toThrow(
        expect.objectContaining({
          code: 'KEY_RESERVED',
          message: expect.stringContaining(hub.toString('base64')),
        }),
      );
    }
  });

  it('refuses malformed keys (KEY_INVALID) and low-order ones (KEY_UNUSABLE)', () => {
    expect(() => agentPublicKey('abc', reserved)).toThrow(expect.objectContaining({ code: 'KEY_INVALID' }));
    expect(() => agentPublicKey(Buffer.alloc(32).toString('base64'), reserved)).toThrow(
      expect.objectContaining({ code: 'KEY_UNUSABLE' }),
    );
  });

  it('property: any other generated key comes back in canonical base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.boolean(), (seed, hex) => {
        const pub = publicKeyFromPrivate(Buffer.from(seed));
        expect(agentPublicKey(hex ? pub.toString('hex') : keyToBase64(pub), reserved)).toBe(keyToBase64(pub));
      }),
      { numRuns: 30 },
    );
  });
});
