import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../keys.js';
import { boxSharedKey } from './disco-box.js';
import { DiscoKeyring } from './disco-keyring.js';

describe('disco keyring', () => {
  it('derives the key both sides share, once per peer', () => {
    const a = generateKeyPair();
    const b = generateKeyPair();
    const ring = new DiscoKeyring({ privateKey: a.privateKey });
    expect(ring.publicKey.equals(a.publicKey)).toBe(true);
    const k = ring.keyFor(b.publicKey);
    expect(k?.equals(boxSharedKey(a.publicKey, b.privateKey))).toBe(true);
    expect(ring.keyFor(b.publicKey)).toBe(k);
  });

  it('gives no key for a low-order point, a wrong length or its own key', () => {
    const a = generateKeyPair();
    const ring = new DiscoKeyring({ privateKey: a.privateKey });
    expect(ring.keyFor(Buffer.alloc(32))).toBeNull(); // the point at u = 0 is low order
    expect(ring.keyFor(Buffer.alloc(31, 9))).toBeNull();
    expect(ring.keyFor(a.publicKey)).toBeNull();
    expect(ring.size).toBe(0);
  });

  it('holds at most maxPeers keys, dropping the least recently used', () => {
    const ring = new DiscoKeyring({ privateKey: generateKeyPair().privateKey, maxPeers: 2 });
    const [p, q, r] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
    const kp = ring.keyFor(p.publicKey);
    ring.keyFor(q.publicKey);
    ring.keyFor(p.publicKey); // p is now the most recent
    ring.keyFor(r.publicKey); // q goes
    expect(ring.size).toBe(2);
    expect(ring.keyFor(p.publicKey)).toBe(kp);
  });
});
