import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocPacket } from '../buffers/packet-room.js';
import { type Aead, nodeAead, opensslAead, sodiumAead } from './crypto/aead.js';
import { Keypair } from './keypair.js';
import {
  openTransport,
  sealTransport,
  sealTransportRun,
  TRANSPORT_HEADROOM,
  TRANSPORT_TAILROOM,
} from './transport.js';

const openssl = opensslAead();
const aeads: Aead[] = [nodeAead, sodiumAead(), openssl].filter((a): a is Aead => a !== null);
const nonce = () => Buffer.alloc(12);

function sender(key: Buffer, counter: number): Keypair {
  const kp = new Keypair(key, Buffer.alloc(32), 1, 0x0a0b0c0d, true, 0);
  kp.sendCounter = counter;
  return kp;
}

/** The packets of `sizes`, each granted room when `room`, with bytes from `seed`. */
function packets(sizes: readonly number[], room: boolean, seed: number): Buffer[] {
  return sizes.map((n, i) => {
    const p = room ? allocPacket(n, TRANSPORT_HEADROOM, TRANSPORT_TAILROOM) : Buffer.alloc(n);
    p.fill((seed + i) & 0xff);
    return p;
  });
}

describe('the OpenSSL addon seals a run of transport datagrams in one call', () => {
  it('is present where the addon loads (npm ci builds it)', () => {
    expect(typeof openssl?.sealTransports).toBe('function');
  });

  it('refuses bad arguments, naming what is wrong, and writes nothing', () => {
    const seal = openssl?.sealTransports;
    if (!seal) throw new Error('the OpenSSL addon did not load');
    const key = Buffer.alloc(32, 1);
    const d = Buffer.alloc(64, 7);
    const call =
      (...args: unknown[]) =>
      () =>
        Reflect.apply(seal, openssl, args);
    expect(call(Buffer.alloc(31), 1, 0, [d])).toThrow(/key must be 32 bytes/);
    expect(call(key, -1, 0, [d])).toThrow(/receiverIndex/);
    expect(call(key, 2 ** 32, 0, [d])).toThrow(/receiverIndex/);
    expect(call(key, 1, 2 ** 53, [d])).toThrow(/firstCounter/);
    expect(call(key, 1, 0.5, [d])).toThrow(/firstCounter/);
    expect(call(key, 1, 0, [])).toThrow(/1-1024/);
    expect(call(key, 1, 0, 'x')).toThrow(/must be an array/);
    expect(call(key, 1, 0, [d, 'x'])).toThrow(/byte array/);
    expect(call(key, 1, 0, [d, Buffer.alloc(31)])).toThrow(/32 bytes or more/);
    expect(call(key, 1, 0)).toThrow(/expected/);
    expect(d.equals(Buffer.alloc(64, 7))).toBe(true); // the first datagram was checked, not written
  });
});

describe.each(aeads.map((a) => [a.name, a] as const))('sealTransportRun (%s)', (_name, aead) => {
  it('property: the same datagrams as sealTransport one packet at a time, the counter advanced by the run', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 1420 }), { minLength: 1, maxLength: 70 }),
        fc.boolean(),
        fc.nat(2 ** 40),
        fc.nat(255),
        (sizes, room, counter, seed) => {
          const key = randomBytes(32);
          const one = sender(key, counter);
          const run = sender(key, counter);
          const expected = packets(sizes, false, seed).map((p) => sealTransport(aead, one, p, 1420, nonce()));
          const out: Buffer[] = [Buffer.from('already here')];
          sealTransportRun(aead, run, packets(sizes, room, seed), 1420, nonce(), out);
          expect(out.length).toBe(sizes.length + 1);
          expect(out[0]?.toString()).toBe('already here'); // appended after what out held
          for (let i = 0; i < sizes.length; i++) expect(out[i + 1]?.equals(expected[i] as Buffer)).toBe(true);
          expect(run.sendCounter).toBe(counter + sizes.length);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('seals a run in place around packets granted room, and each opens at the receiver', () => {
    const key = randomBytes(32);
    const rx = new Keypair(Buffer.alloc(32), key, 0x0a0b0c0d, 1, false, 0);
    const run = packets([1392, 1392, 700, 0], true, 3);
    const out: Buffer[] = [];
    sealTransportRun(aead, sender(key, 5), run, 1420, nonce(), out);
    for (let i = 0; i < run.length; i++) {
      const d = out[i] as Buffer;
      expect(d.buffer).toBe((run[i] as Buffer).buffer);
      expect(d.readUInt32LE(0)).toBe(4);
      expect(d.readUInt32LE(4)).toBe(0x0a0b0c0d);
      expect(Number(d.readBigUInt64LE(8))).toBe(5 + i);
      const plain = openTransport(aead, rx, Buffer.from(d), nonce());
      expect(
        plain
          ?.subarray(0, [1392, 1392, 700, 0][i])
          .equals(Buffer.alloc([1392, 1392, 700, 0][i] as number, 3 + i)),
      ).toBe(true);
    }
  });
});
