import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { blake2s } from '@noble/hashes/blake2.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../errors.js';
import {
  AEAD_NAMES,
  type Aead,
  defaultAead,
  defaultX25519,
  hash,
  hmac,
  kdf1,
  kdf2,
  kdf3,
  mac,
  naclX25519,
  nodeAead,
  nodeX25519,
  opensslAead,
  sodiumAead,
  sodiumX25519,
  writeNonce,
  xaeadOpen,
  xaeadSeal,
} from './index.js';

const hex = (s: string) => Buffer.from(s.replace(/[\s:]/g, ''), 'hex');

// RFC 8439 §2.8.2
const RFC_KEY = hex('808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f');
const RFC_NONCE = hex('070000004041424344454647');
const RFC_AAD = hex('50515253c0c1c2c3c4c5c6c7');
const RFC_PT = Buffer.from(
  "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.",
);
const RFC_CT = hex(`d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6
  3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58
  fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116`);
const RFC_TAG = hex('1ae10b594f09e26a7e902ecbd0600691');

const sodium = sodiumAead();
const openssl = opensslAead();
const impls: Aead[] = [nodeAead, ...(sodium ? [sodium] : []), ...(openssl ? [openssl] : [])];

describe('AEAD', () => {
  it('sodium-native loads on this machine', () => {
    expect(sodium?.name).toBe('sodium-native');
  });

  it('the OpenSSL addon loads on this machine (npm ci builds native/openssl-aead) and is the default', () => {
    expect(openssl?.name).toBe('openssl');
    expect(defaultAead(undefined)).toBe(openssl);
    expect(defaultAead('')).toBe(openssl);
  });

  it('TUNNEL_WG_AEAD picks an implementation by name, and an unknown name is BAD_CONFIG naming it', () => {
    for (const name of AEAD_NAMES) expect(defaultAead(name).name).toBe(name);
    let err: unknown;
    try {
      defaultAead('chacha');
    } catch (e) {
      err = e;
    }
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toContain("'chacha'");
    expect((err as Error).message).toContain('openssl, sodium-native, node:crypto');
  });

  for (const a of impls) {
    it(`${a.name} matches RFC 8439 §2.8.2 and opens it`, () => {
      const out = Buffer.alloc(RFC_PT.length + 16);
      expect(a.seal(out, RFC_KEY, RFC_NONCE, RFC_PT, RFC_AAD)).toBe(out.length);
      expect(out.subarray(0, RFC_PT.length).equals(RFC_CT)).toBe(true);
      expect(out.subarray(RFC_PT.length).equals(RFC_TAG)).toBe(true);
      const back = Buffer.alloc(RFC_PT.length);
      expect(a.open(back, RFC_KEY, RFC_NONCE, out, RFC_AAD)).toBe(RFC_PT.length);
      expect(back.equals(RFC_PT)).toBe(true);
    });

    it(`${a.name} rejects a flipped bit, a wrong AAD and a short input`, () => {
      const out = Buffer.alloc(RFC_PT.length + 16);
      a.seal(out, RFC_KEY, RFC_NONCE, RFC_PT, RFC_AAD);
      const back = Buffer.alloc(RFC_PT.length);
      const bad = Buffer.from(out);
      bad[5]! ^= 1;
      expect(a.open(back, RFC_KEY, RFC_NONCE, bad, RFC_AAD)).toBe(-1);
      expect(a.open(back, RFC_KEY, RFC_NONCE, out, Buffer.from('x'))).toBe(-1);
      expect(a.open(back, RFC_KEY, RFC_NONCE, out.subarray(0, 10), RFC_AAD)).toBe(-1);
    });

    it(`${a.name} seals and opens in place (the transport path's use)`, () => {
      const buf = Buffer.alloc(RFC_PT.length + 16);
      RFC_PT.copy(buf);
      expect(a.seal(buf, RFC_KEY, RFC_NONCE, buf.subarray(0, RFC_PT.length), RFC_AAD)).toBe(buf.length);
      expect(buf.subarray(0, RFC_PT.length).equals(RFC_CT)).toBe(true);
      expect(buf.subarray(RFC_PT.length).equals(RFC_TAG)).toBe(true);
      expect(a.open(buf.subarray(0, RFC_PT.length), RFC_KEY, RFC_NONCE, buf, RFC_AAD)).toBe(RFC_PT.length);
      expect(buf.subarray(0, RFC_PT.length).equals(RFC_PT)).toBe(true);
    });

    it(`${a.name} seals an empty plaintext to the tag alone, and opens it`, () => {
      const tag = Buffer.alloc(16);
      expect(a.seal(tag, RFC_KEY, RFC_NONCE, Buffer.alloc(0))).toBe(16);
      expect(tag.equals(Buffer.alloc(16))).toBe(false);
      expect(a.open(Buffer.alloc(0), RFC_KEY, RFC_NONCE, tag)).toBe(0);
      tag[0]! ^= 1;
      expect(a.open(Buffer.alloc(0), RFC_KEY, RFC_NONCE, tag)).toBe(-1);
    });
  }

  it('the OpenSSL addon refuses wrong sizes and types with a clear error instead of touching memory', () => {
    if (!openssl) throw new Error('OpenSSL addon missing');
    const key = Buffer.alloc(32);
    const nonce = Buffer.alloc(12);
    expect(() => openssl.seal(Buffer.alloc(20), key, nonce, Buffer.alloc(5))).toThrow(
      /shorter than input \+ 16/,
    );
    expect(() => openssl.seal(Buffer.alloc(64), key.subarray(1), nonce, Buffer.alloc(5))).toThrow(/32 bytes/);
    expect(() => openssl.open(Buffer.alloc(64), key, nonce.subarray(4), Buffer.alloc(20))).toThrow(
      /12 bytes/,
    );
    expect(() => openssl.open(Buffer.alloc(3), key, nonce, Buffer.alloc(20))).toThrow(
      /shorter than input - 16/,
    );
    const bad = 'not bytes' as unknown as Uint8Array;
    expect(() => openssl.seal(Buffer.alloc(64), key, nonce, bad)).toThrow(/input must be a byte array/);
    expect(() => openssl.seal(Buffer.alloc(64), key, nonce, Buffer.alloc(5), bad)).toThrow(/aad must be/);
    // An extra argument after aad does not make the addon skip the aad.
    const withExtra = Buffer.alloc(21);
    const plain = Buffer.alloc(21);
    const aad = Buffer.from('header');
    const sealWithExtra = openssl.seal as (...args: unknown[]) => number;
    expect(sealWithExtra(withExtra, key, nonce, Buffer.alloc(5), aad, 'extra')).toBe(21);
    nodeAead.seal(plain, key, nonce, Buffer.alloc(5), aad);
    expect(withExtra.equals(plain)).toBe(true);
  });

  it('the OpenSSL addon keeps its cipher contexts per thread: a worker and the main thread seal at once', async () => {
    if (!openssl) throw new Error('OpenSSL addon missing');
    // The worker loads the addon itself, says so, and seals 200,000 packets; this thread seals and checks its own
    // until the worker's shared done flag is set, so the two overlap. Both must match node:crypto byte for byte:
    // a context shared across threads would mix keys and nonces.
    const done = new Int32Array(new SharedArrayBuffer(4));
    const src = `
      const { parentPort, workerData } = require('node:worker_threads');
      const { createRequire } = require('node:module');
      const a = createRequire(${JSON.stringify(import.meta.url)})('@wg-relay-tunnel/openssl-aead');
      const key = Buffer.alloc(32, 7), nonce = Buffer.alloc(12), pt = Buffer.alloc(1500, 3), out = Buffer.alloc(1516);
      parentPort.postMessage('started');
      for (let i = 0; i < 200000; i++) { nonce.writeUInt32LE(i, 4); a.seal(out, key, nonce, pt); }
      Atomics.store(workerData, 0, 1);
      parentPort.postMessage(out);`;
    const worker = new Worker(src, { eval: true, workerData: done });
    const started = new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
    });
    const fromWorker = new Promise<Uint8Array>((resolve, reject) => {
      worker.on('message', (m) => {
        if (m instanceof Uint8Array) resolve(m);
      });
      worker.once('error', reject);
    });
    await started;
    const key = Buffer.alloc(32, 9);
    const nonce = Buffer.alloc(12);
    const pt = Buffer.alloc(1500, 5);
    const out = Buffer.alloc(1516);
    const ref = Buffer.alloc(1516);
    let overlapped = 0;
    for (let i = 0; Atomics.load(done, 0) === 0 && i < 2_000_000; i++) {
      nonce.writeUInt32LE(i, 4);
      openssl.seal(out, key, nonce, pt);
      nodeAead.seal(ref, key, nonce, pt);
      expect(out.equals(ref)).toBe(true);
      overlapped++;
    }
    expect(overlapped).toBeGreaterThan(0);
    const last = Buffer.from(await fromWorker);
    await worker.terminate();
    const wnonce = Buffer.alloc(12);
    wnonce.writeUInt32LE(199_999, 4);
    nodeAead.seal(ref, Buffer.alloc(32, 7), wnonce, Buffer.alloc(1500, 3));
    expect(last.equals(ref)).toBe(true);
  });

  it('every implementation agrees with node:crypto on random inputs, in both directions, and rejects forgeries', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.uint8Array({ maxLength: 2000 }),
        fc.option(fc.uint8Array({ maxLength: 40 }), { nil: undefined }),
        fc.nat(),
        (key, counter, pt, aad, flip) => {
          const nonce = writeNonce(Buffer.alloc(12), counter);
          const ref = Buffer.alloc(pt.length + 16);
          nodeAead.seal(ref, key, nonce, pt, aad);
          for (const a of impls) {
            const out = Buffer.alloc(pt.length + 16);
            expect(a.seal(out, key, nonce, pt, aad)).toBe(out.length);
            expect(out.equals(ref)).toBe(true);
            const back = Buffer.alloc(pt.length);
            expect(a.open(back, key, nonce, ref, aad)).toBe(pt.length);
            expect(back.equals(Buffer.from(pt))).toBe(true);
            const forged = Buffer.from(ref);
            forged[flip % forged.length]! ^= 1 << (flip % 8);
            expect(a.open(back, key, nonce, forged, aad)).toBe(-1);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('writeNonce puts the counter little-endian after four zero bytes', () => {
    expect(writeNonce(Buffer.alloc(12, 0xff), 0x0102030405060708n).toString('hex')).toBe(
      '000000000807060504030201',
    );
  });
});

describe('hash and KDF (reference §1, §2; wireguard-go kdf_test.go)', () => {
  it('C0 and H0', () => {
    const c0 = hash(Buffer.from('Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s'));
    expect(c0.toString('hex')).toBe('60e26daef327efc02ec335e2a025d2d016eb4206f87277f52d38d1988b78cd36');
    const h0 = hash(c0, Buffer.from('WireGuard v1 zx2c4 Jason@zx2c4.com'));
    expect(h0.toString('hex')).toBe('2211b361081ac566691243db458ad5322d9c6c662293e8b70ee19c65ba079ef3');
  });

  const vectors = [
    [
      '746573742d6b6579',
      '746573742d696e707574',
      '6f0e5ad38daba1bea8a0d213688736f19763239305e0f58aba697f9ffc41c633',
      'df1194df20802a4fe594cde27e92991c8cae66c366e8106aaa937a55fa371e8a',
      'fac6e2745a325f5dc5d11a5b165aad08b0ada28e7b4e666b7c077934a4d76c24',
    ],
    [
      '776972656775617264',
      '776972656775617264',
      '491d43bbfdaa8750aaf535e334ecbfe5129967cd64635101c566d4caefda96e8',
      '1e71a379baefd8a79aa4662212fcafe19a23e2b609a3db7d6bcba8f560e3d25f',
      '31e1ae48bddfbe5de38f295e5452b1909a1b4e38e183926af3780b0c1e1f0160',
    ],
    [
      '',
      '',
      '8387b46bf43eccfcf349552a095d8315c4055beb90208fb1be23b894bc2ed5d0',
      '58a0e5f6faefccf4807bff1f05fa8a9217945762040bcec2f4b4a62bdfe0e86e',
      '0ce6ea98ec548f8e281e93e32db65621c45eb18dc6f0a7ad94178610a2f7338e',
    ],
  ] as const;
  for (const [k, i, t1, t2, t3] of vectors) {
    it(`KDF1/2/3 key=${k || '(empty)'}`, () => {
      const [a, b, c] = kdf3(hex(k), hex(i));
      expect([a.toString('hex'), b.toString('hex'), c.toString('hex')]).toEqual([t1, t2, t3]);
      const [d, e] = kdf2(hex(k), hex(i));
      expect([d.toString('hex'), e.toString('hex')]).toEqual([t1, t2]);
      expect(kdf1(hex(k), hex(i)).toString('hex')).toBe(t1);
    });
  }

  it('MAC is keyed BLAKE2s with the output length in the parameter block (RFC 7693 keyed KAT)', () => {
    const key = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
    // blake2s-kat.txt keyed, in = empty: the 32-byte keyed digest
    expect(Buffer.from(blake2s(new Uint8Array(0), { key })).toString('hex')).toBe(
      '48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49',
    );
    const m = mac(key, new Uint8Array(0));
    expect(m.length).toBe(16);
    // a 16-byte BLAKE2s is not the truncated 32-byte one (outlen is hashed in), nor an HMAC
    expect(Buffer.from(m).toString('hex')).not.toBe('48a8997da407876b3d79c0d92325ad3b');
    expect(Buffer.from(m).equals(hmac(key, new Uint8Array(0)).subarray(0, 16))).toBe(false);
  });

  it('XAEAD round trip and AAD binding', () => {
    const key = randomBytes(32);
    const nonce = randomBytes(24);
    const ct = xaeadSeal(key, nonce, Buffer.from('cookie-16-bytes!'), Buffer.from('aad'));
    expect(ct.length).toBe(32);
    expect(Buffer.from(xaeadOpen(key, nonce, ct, Buffer.from('aad'))!).toString()).toBe('cookie-16-bytes!');
    expect(xaeadOpen(key, nonce, ct, Buffer.from('other'))).toBeNull();
  });
});

describe('X25519', () => {
  it('sodium-native loads and is the default', () => {
    expect(sodiumX25519()?.name).toBe('sodium-native');
    expect(defaultX25519().name).toBe('sodium-native');
  });

  it('node:crypto, sodium-native and tweetnacl agree on public keys and shared secrets', () => {
    const sx = sodiumX25519()!;
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (a, b) => {
          const na = nodeX25519.importPrivate(a);
          const ta = naclX25519.importPrivate(a);
          const nb = nodeX25519.importPrivate(b);
          expect(na.publicKey.equals(ta.publicKey)).toBe(true);
          const s1 = nodeX25519.dh(na, nodeX25519.importPublic(nb.publicKey));
          const s2 = naclX25519.dh(ta, naclX25519.importPublic(nb.publicKey));
          const s3 = nodeX25519.dh(nb, nodeX25519.importPublic(na.publicKey));
          const sa = sx.importPrivate(a);
          expect(sa.publicKey.equals(ta.publicKey)).toBe(true);
          const s4 = sx.dh(sa, sx.importPublic(nb.publicKey));
          expect(s1.equals(s2)).toBe(true);
          expect(s1.equals(s3)).toBe(true);
          expect(s1.equals(s4)).toBe(true);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('generated ephemeral keys work across implementations', () => {
    for (const x of [nodeX25519, sodiumX25519()!, naclX25519]) {
      const e = x.generate();
      const t = naclX25519.importPrivate(e.raw);
      expect(t.publicKey.equals(e.publicKey)).toBe(true);
    }
  });

  it('an all-zero shared secret (low-order point) is a WG_HANDSHAKE_FAILED error in both', () => {
    const priv = randomBytes(32);
    for (const x of [nodeX25519, naclX25519, sodiumX25519()!]) {
      const h = x.importPrivate(priv);
      let err: unknown;
      try {
        x.dh(h, x.importPublic(Buffer.alloc(32)));
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'WG_HANDSHAKE_FAILED')).toBe(true);
    }
  });
});
