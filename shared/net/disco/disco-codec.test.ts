import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../keys.js';
import { naclDiscoBox, sodiumDiscoBox } from './disco-box.js';
import {
  DISCO_HEADER_LEN,
  DISCO_MAGIC,
  DISCO_MAX_CANDIDATES,
  DISCO_MAX_LEN,
  DISCO_MAX_PROBE_LEN,
  DISCO_MIN_LEN,
  type DiscoAddress,
  type DiscoMessage,
  encodeDiscoPayload,
  isDiscoMessage,
  newTxid,
  openDisco,
  sealDisco,
} from './disco-codec.js';
import { DiscoKeyring } from './disco-keyring.js';

const alice = generateKeyPair();
const bob = generateKeyPair();
const mallory = generateKeyPair();
const aliceRing = new DiscoKeyring({ privateKey: alice.privateKey });
const bobRing = new DiscoKeyring({ privateKey: bob.privateKey });

/** Bob's receive side: only Alice is his peer. */
const bobOpens = (d: Uint8Array) =>
  openDisco(d, { keyFor: (k) => (k.equals(alice.publicKey) ? bobRing.keyFor(k) : null) });
const aliceSeals = (m: DiscoMessage, nonce?: Uint8Array) =>
  sealDisco(m, { sender: alice.publicKey, key: aliceRing.keyFor(bob.publicKey)!, nonce });

const arbAddress: fc.Arbitrary<DiscoAddress> = fc.record({
  host: fc.oneof(fc.ipV4(), fc.constantFrom('2001:db8::1', '::1', 'fe80::1:2', '2606:4700::6810:85e5')),
  port: fc.integer({ min: 1, max: 65_535 }),
});
const arbCommon = fc.record({
  txid: fc.uint8Array({ minLength: 12, maxLength: 12 }).map((u) => Buffer.from(u)),
  sentAt: fc.integer({ min: 0, max: 2 ** 48 }),
});
const arbMessage: fc.Arbitrary<DiscoMessage> = fc.oneof(
  arbCommon.map((c) => ({ type: 'ping' as const, ...c })),
  fc.tuple(arbCommon, arbAddress).map(([c, observed]) => ({ type: 'pong' as const, ...c, observed })),
  arbCommon.map((c) => ({ type: 'pong' as const, ...c })),
  fc
    .tuple(arbCommon, fc.array(arbAddress, { maxLength: DISCO_MAX_CANDIDATES }))
    .map(([c, candidates]) => ({ type: 'call-me-maybe' as const, ...c, candidates })),
);

describe('disco codec', () => {
  it('lays a ping out byte by byte as docs/PROTOCOL.md says; tweetnacl box.open reads it', () => {
    const txid = Buffer.from('000102030405060708090a0b', 'hex');
    const nonce = new Uint8Array(24).fill(0x42);
    const d = aliceSeals({ type: 'ping', txid, sentAt: 0x0102_0304_0506 }, nonce);
    expect(d.length).toBe(100);
    expect(d.subarray(0, 6).toString('hex')).toBe('ee646973636f');
    expect(d.subarray(6, 38).equals(alice.publicKey)).toBe(true);
    expect(d.subarray(38, 62).equals(Buffer.from(nonce))).toBe(true);
    const plain = nacl.box.open(d.subarray(62), nonce, alice.publicKey, bob.privateKey);
    expect(Buffer.from(plain!).toString('hex')).toBe(
      '0100' + '000102030405060708090a0b' + '0000010203040506',
    );
  });

  it('writes a pong address as v4-mapped ip(16) | port(2)', () => {
    const p = encodeDiscoPayload({
      type: 'pong',
      txid: newTxid(),
      sentAt: 1,
      observed: { host: '198.51.100.9', port: 41641 },
    });
    expect(p.subarray(22).toString('hex')).toBe('00000000000000000000ffffc6336409' + 'a2a9');
  });

  it('round-trips every message through seal and open, with either box (property)', () => {
    fc.assert(
      fc.property(arbMessage, fc.constantFrom(naclDiscoBox, sodiumDiscoBox() ?? naclDiscoBox), (m, box) => {
        const d = sealDisco(m, { sender: alice.publicKey, key: aliceRing.keyFor(bob.publicKey)!, box });
        expect(isDiscoMessage(d)).toBe(true);
        expect(d.length).toBeGreaterThanOrEqual(DISCO_MIN_LEN);
        expect(d.length).toBeLessThanOrEqual(DISCO_MAX_LEN);
        const r = bobOpens(d);
        expect(r).toEqual({ ok: true, sender: alice.publicKey, message: m });
      }),
      { numRuns: 300 },
    );
  });

  it('refuses the message when any one bit is flipped (property)', () => {
    fc.assert(
      fc.property(arbMessage, fc.nat(), fc.integer({ min: 0, max: 7 }), (m, at, bit) => {
        const d = aliceSeals(m);
        const i = at % d.length;
        d[i] = (d[i] ?? 0) ^ (1 << bit);
        expect(bobOpens(d).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every truncation and any extra byte', () => {
    const d = aliceSeals({ type: 'call-me-maybe', txid: newTxid(), sentAt: 5, candidates: [] });
    for (let n = 0; n < d.length; n++) expect(bobOpens(d.subarray(0, n)).ok).toBe(false);
    expect(bobOpens(Buffer.concat([d, Buffer.alloc(1)])).ok).toBe(false);
  });

  it('never throws on random bytes, with or without the magic (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: DISCO_MAX_LEN + 40 }), fc.boolean(), (raw, magic) => {
        const d = magic ? Buffer.concat([DISCO_MAGIC, raw]) : Buffer.from(raw);
        const r = openDisco(d, { keyFor: (k) => bobRing.keyFor(k) });
        expect(r.ok).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('drops a message sealed with the wrong key as auth, and a non-peer sender as unknown-sender', () => {
    const m: DiscoMessage = { type: 'ping', txid: newTxid(), sentAt: 9 };
    const malloryRing = new DiscoKeyring({ privateKey: mallory.privateKey });
    // Mallory claims to be Alice but can only box with her own key.
    const forged = sealDisco(m, { sender: alice.publicKey, key: malloryRing.keyFor(bob.publicKey)! });
    expect(bobOpens(forged)).toEqual({ ok: false, reason: 'auth' });
    const honest = sealDisco(m, { sender: mallory.publicKey, key: malloryRing.keyFor(bob.publicKey)! });
    expect(bobOpens(honest)).toEqual({ ok: false, reason: 'unknown-sender' });
  });

  it('classifies: not-disco, short, too-long', () => {
    expect(bobOpens(Buffer.from([1, 0, 0, 0, ...Array(120).fill(0)]))).toEqual({
      ok: false,
      reason: 'not-disco',
    });
    expect(bobOpens(Buffer.concat([DISCO_MAGIC, Buffer.alloc(DISCO_HEADER_LEN)]))).toEqual({
      ok: false,
      reason: 'short',
    });
    expect(bobOpens(Buffer.concat([DISCO_MAGIC, Buffer.alloc(DISCO_MAX_PROBE_LEN)]))).toEqual({
      ok: false,
      reason: 'too-long',
    });
    // Only a probe may be longer than DISCO_MAX_LEN: any other type that long is refused once it opens.
    const key = aliceRing.keyFor(bob.publicKey)!;
    const nonce = nacl.randomBytes(24);
    const longPing = Buffer.concat([
      encodeDiscoPayload({ type: 'ping', txid: newTxid(), sentAt: 1 }),
      Buffer.alloc(DISCO_MAX_LEN),
    ]);
    const sealed = Buffer.concat([DISCO_MAGIC, alice.publicKey, nonce, nacl.secretbox(longPing, nonce, key)]);
    expect(bobOpens(sealed)).toEqual({ ok: false, reason: 'too-long' });
  });

  it('pads a probe to its size and reads the size back; an ack carries it (property)', () => {
    fc.assert(
      fc.property(
        arbCommon,
        fc.integer({ min: DISCO_MIN_LEN, max: DISCO_MAX_PROBE_LEN }),
        fc.constantFrom('probe' as const, 'probe-ack' as const),
        (c, size, type) => {
          const d = aliceSeals({ type, ...c, size });
          if (type === 'probe') expect(d.length).toBe(size);
          else expect(d.length).toBe(DISCO_MIN_LEN + 4);
          const r = bobOpens(d);
          expect(r).toEqual({ ok: true, sender: alice.publicKey, message: { type, ...c, size } });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses a probe size out of range, and a probe cut or grown by a byte (property)', () => {
    for (const size of [DISCO_MIN_LEN - 1, DISCO_MAX_PROBE_LEN + 1, 1.5])
      expect(() => aliceSeals({ type: 'probe', txid: newTxid(), sentAt: 1, size })).toThrow(/probe size/);
    fc.assert(
      fc.property(fc.integer({ min: DISCO_MIN_LEN, max: 9_000 }), fc.boolean(), (size, cut) => {
        const d = aliceSeals({ type: 'probe', txid: newTxid(), sentAt: 1, size });
        const changed = cut ? d.subarray(0, d.length - 1) : Buffer.concat([d, Buffer.alloc(1)]);
        expect(bobOpens(changed).ok).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('classifies an ack whose size is out of range or whose body is not 4 bytes as bad-length (property)', () => {
    const key = aliceRing.keyFor(bob.publicKey)!;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 8 }), (body) => {
        const head = encodeDiscoPayload({
          type: 'probe-ack',
          txid: newTxid(),
          sentAt: 1,
          size: DISCO_MIN_LEN,
        });
        const payload = Buffer.concat([head.subarray(0, head.length - 4), body]);
        const nonce = nacl.randomBytes(24);
        const d = Buffer.concat([DISCO_MAGIC, alice.publicKey, nonce, nacl.secretbox(payload, nonce, key)]);
        const size = body.length === 4 ? Buffer.from(body).readUInt32BE(0) : -1;
        const fits = size >= DISCO_MIN_LEN && size <= DISCO_MAX_PROBE_LEN;
        expect(bobOpens(d)).toEqual(
          fits
            ? {
                ok: true,
                sender: alice.publicKey,
                message: expect.objectContaining({ type: 'probe-ack', size }),
              }
            : { ok: false, reason: 'bad-length' },
        );
      }),
      { numRuns: 300 },
    );
  });

  it('classifies payloads that open but do not fit: bad-type, bad-version, bad-length, bad-address', () => {
    const key = aliceRing.keyFor(bob.publicKey)!;
    const sealRaw = (payload: Buffer) => {
      const nonce = nacl.randomBytes(24);
      return Buffer.concat([DISCO_MAGIC, alice.publicKey, nonce, nacl.secretbox(payload, nonce, key)]);
    };
    const ping = encodeDiscoPayload({ type: 'ping', txid: newTxid(), sentAt: 1 });
    const with0 = (b: Buffer, i: number, v: number) => {
      const c = Buffer.from(b);
      c[i] = v;
      return c;
    };
    expect(bobOpens(sealRaw(with0(ping, 0, 9)))).toEqual({ ok: false, reason: 'bad-type' });
    expect(bobOpens(sealRaw(with0(ping, 1, 1)))).toEqual({ ok: false, reason: 'bad-version' });
    expect(bobOpens(sealRaw(Buffer.concat([ping, Buffer.alloc(1)])))).toEqual({
      ok: false,
      reason: 'bad-length',
    });
    const pong = encodeDiscoPayload({
      type: 'pong',
      txid: newTxid(),
      sentAt: 1,
      observed: { host: '::1', port: 9 },
    });
    expect(bobOpens(sealRaw(pong.subarray(0, pong.length - 1)))).toEqual({ ok: false, reason: 'bad-length' });
    expect(bobOpens(sealRaw(with0(pong, pong.length - 1, 0)))).toEqual({ ok: false, reason: 'bad-address' });
    const cmm = encodeDiscoPayload({ type: 'call-me-maybe', txid: newTxid(), sentAt: 1, candidates: [] });
    const tooMany = Buffer.concat([cmm, Buffer.alloc(18 * (DISCO_MAX_CANDIDATES + 1), 1)]);
    expect(bobOpens(sealRaw(tooMany)).ok).toBe(false);
  });

  it('refuses to encode what no peer would accept', () => {
    const txid = newTxid();
    const bad: DiscoMessage[] = [
      { type: 'ping', txid: Buffer.alloc(11), sentAt: 1 },
      { type: 'ping', txid, sentAt: -1 },
      { type: 'pong', txid, sentAt: 1, observed: { host: 'example.com', port: 1 } },
      { type: 'pong', txid, sentAt: 1, observed: { host: '10.0.0.1', port: 0 } },
      {
        type: 'call-me-maybe',
        txid,
        sentAt: 1,
        candidates: Array(DISCO_MAX_CANDIDATES + 1).fill({ host: '10.0.0.1', port: 1 }),
      },
    ];
    for (const m of bad) expect(() => encodeDiscoPayload(m)).toThrow(/disco:/);
  });

  it('never mistakes a WireGuard or STUN datagram for disco', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.uint8Array({ maxLength: 200 }), (type, rest) => {
        expect(isDiscoMessage(Buffer.from([type, 0, 0, 0, ...rest]))).toBe(false);
      }),
    );
    expect(DISCO_MAGIC[0]! & 0xc0).not.toBe(0); // STUN messages start with two zero bits
  });
});
