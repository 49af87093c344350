import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocPacket, headroomOf, tailroomOf } from '../buffers/packet-room.js';
import { type Aead, nodeAead, opensslAead, sodiumAead } from './crypto/aead.js';
import { Keypair } from './keypair.js';
import {
  openTransport,
  paddedLength,
  sealTransport,
  TRANSPORT_HEADROOM,
  TRANSPORT_TAILROOM,
} from './transport.js';

const aeads: Aead[] = [nodeAead, sodiumAead(), opensslAead()].filter((a): a is Aead => a !== null);
const nonce = () => Buffer.alloc(12);

function pair(): { tx: () => Keypair; rx: Keypair } {
  const key = randomBytes(32);
  return {
    tx: () => new Keypair(key, Buffer.alloc(32), 1, 0x01020304, true, 0),
    rx: new Keypair(Buffer.alloc(32), key, 0x01020304, 1, false, 0),
  };
}

describe.each(aeads.map((a) => [a.name, a] as const))('sealTransport in place (%s)', (_name, aead) => {
  it('property: a packet with room seals to the same bytes as a plain copy, in its own allocation', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 3000 }),
        fc.constantFrom(576, 1280, 1420, 2000, 65_503),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        fc.nat(1_000_000),
        (bytes, mtu, extraHead, extraTail, counter) => {
          fc.pre(bytes.length <= mtu);
          const keys = pair();
          const a = keys.tx();
          const b = keys.tx();
          a.sendCounter = b.sendCounter = counter;
          const plain = Buffer.from(bytes);
          const viaCopy = sealTransport(aead, a, plain, mtu, nonce());
          expect(plain.equals(Buffer.from(bytes))).toBe(true); // the copying path leaves the caller's bytes alone
          const p = allocPacket(bytes.length, TRANSPORT_HEADROOM + extraHead, TRANSPORT_TAILROOM + extraTail);
          p.set(bytes);
          const inPlace = sealTransport(aead, b, p, mtu, nonce());
          expect(inPlace.equals(viaCopy)).toBe(true);
          expect(inPlace.buffer).toBe(p.buffer);
          expect(inPlace.byteOffset).toBe(extraHead);
          expect(inPlace.length).toBe(16 + paddedLength(bytes.length, mtu) + 16);
          expect(headroomOf(inPlace)).toBe(extraHead); // the rest is handed down
          expect(tailroomOf(inPlace)).toBe(
            TRANSPORT_TAILROOM + extraTail - (paddedLength(bytes.length, mtu) - bytes.length) - 16,
          );
          expect(a.sendCounter).toBe(counter + 1);
          expect(b.sendCounter).toBe(counter + 1);
          const opened = openTransport(aead, keys.rx, Buffer.from(inPlace), nonce());
          expect(opened?.subarray(0, bytes.length).equals(Buffer.from(bytes))).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('copies when the room is too small for the header or the padding and tag', () => {
    const keys = pair();
    const bytes = randomBytes(1001); // pads to 1008: 7 bytes of padding + 16 of tag needed after it
    const expected = sealTransport(aead, keys.tx(), Buffer.from(bytes), 1420, nonce());
    for (const [h, t] of [
      [TRANSPORT_HEADROOM - 1, TRANSPORT_TAILROOM],
      [TRANSPORT_HEADROOM, 7 + 16 - 1],
    ] as const) {
      const p = allocPacket(bytes.length, h, t);
      p.set(bytes);
      const out = sealTransport(aead, keys.tx(), p, 1420, nonce());
      expect(out.equals(expected)).toBe(true);
      expect(out.buffer).not.toBe(p.buffer);
      expect(p.equals(bytes)).toBe(true); // untouched: it was not handed over
    }
    const exact = allocPacket(bytes.length, TRANSPORT_HEADROOM, 7 + 16);
    exact.set(bytes);
    const out = sealTransport(aead, keys.tx(), exact, 1420, nonce());
    expect(out.equals(expected)).toBe(true);
    expect(out.buffer).toBe(exact.buffer);
  });

  it('keepalives (empty, no room) still seal to 32 bytes', () => {
    const keys = pair();
    const k = sealTransport(aead, keys.tx(), Buffer.alloc(0), 1420, nonce());
    expect(k.length).toBe(32);
    expect(openTransport(aead, keys.rx, k, nonce())?.length).toBe(0);
  });
});
