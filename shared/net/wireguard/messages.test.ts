import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import {
  COOKIE_LEN,
  INIT_LEN,
  MSG_TRANSPORT,
  messageType,
  parseCookieReply,
  parseInitiation,
  parseResponse,
  parseTransport,
  RESP_LEN,
  writeCookieReply,
  writeInitiation,
  writeResponse,
  writeTransportHeader,
} from './messages.js';

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((u) => Buffer.from(u));
const u32 = fc.integer({ min: 0, max: 0xffffffff });

function onlyTunnelErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (!isTunnelError(e)) throw e;
    expect(['WIRE_TRUNCATED', 'WIRE_MALFORMED', 'WIRE_BAD_TYPE']).toContain(e.code);
  }
}

describe('message codecs', () => {
  it('initiation round trip: 148 bytes, type 1 + three zero bytes, fields at their offsets', () => {
    fc.assert(
      fc.property(u32, bytes(32), bytes(48), bytes(28), (senderIndex, ephemeral, encryptedStatic, ts) => {
        const b = writeInitiation({ senderIndex, ephemeral, encryptedStatic, encryptedTimestamp: ts });
        expect(b.length).toBe(INIT_LEN);
        expect(b.subarray(0, 4).toString('hex')).toBe('01000000');
        const m = parseInitiation(b);
        expect(m.senderIndex).toBe(senderIndex);
        expect(m.ephemeral.equals(ephemeral)).toBe(true);
        expect(m.encryptedStatic.equals(encryptedStatic)).toBe(true);
        expect(m.encryptedTimestamp.equals(ts)).toBe(true);
        expect(m.mac1.equals(Buffer.alloc(16))).toBe(true);
        expect(b.readUInt32LE(4)).toBe(senderIndex);
        expect(b.subarray(8, 40).equals(ephemeral)).toBe(true);
        // views, not copies
        expect(m.ephemeral.buffer).toBe(b.buffer);
      }),
    );
  });

  it('response round trip: 92 bytes', () => {
    fc.assert(
      fc.property(
        u32,
        u32,
        bytes(32),
        bytes(16),
        (senderIndex, receiverIndex, ephemeral, encryptedNothing) => {
          const b = writeResponse({ senderIndex, receiverIndex, ephemeral, encryptedNothing });
          expect(b.length).toBe(RESP_LEN);
          const m = parseResponse(b);
          expect([m.senderIndex, m.receiverIndex]).toEqual([senderIndex, receiverIndex]);
          expect(b.subarray(12, 44).equals(ephemeral)).toBe(true);
          expect(m.encryptedNothing.equals(encryptedNothing)).toBe(true);
        },
      ),
    );
  });

  it('cookie reply round trip: 64 bytes', () => {
    fc.assert(
      fc.property(u32, bytes(24), bytes(32), (receiverIndex, nonce, encryptedCookie) => {
        const b = writeCookieReply({ receiverIndex, nonce, encryptedCookie });
        expect(b.length).toBe(COOKIE_LEN);
        const m = parseCookieReply(b);
        expect(m.receiverIndex).toBe(receiverIndex);
        expect(m.nonce.equals(nonce)).toBe(true);
        expect(m.encryptedCookie.equals(encryptedCookie)).toBe(true);
      }),
    );
  });

  it('transport header round trip with a 64-bit counter', () => {
    fc.assert(
      fc.property(
        u32,
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.integer({ min: 16, max: 200 }),
        (idx, ctr, n) => {
          const b = Buffer.alloc(16 + n);
          writeTransportHeader(b, idx, ctr);
          const m = parseTransport(b);
          expect([m.receiverIndex, m.counter, m.payload.length]).toEqual([idx, ctr, n]);
          expect(b.subarray(0, 4).toString('hex')).toBe('04000000');
        },
      ),
    );
  });

  it('exact lengths: one byte short or long is refused with a WIRE_* code', () => {
    const init = writeInitiation({
      senderIndex: 1,
      ephemeral: Buffer.alloc(32),
      encryptedStatic: Buffer.alloc(48),
      encryptedTimestamp: Buffer.alloc(28),
    });
    expect(() => parseInitiation(init.subarray(0, 147))).toThrow(
      expect.objectContaining({ code: 'WIRE_TRUNCATED' }),
    );
    expect(() => parseInitiation(Buffer.concat([init, Buffer.alloc(1)]))).toThrow(
      expect.objectContaining({ code: 'WIRE_MALFORMED' }),
    );
    expect(() => parseResponse(init.subarray(0, 92))).toThrow(
      expect.objectContaining({ code: 'WIRE_BAD_TYPE' }),
    );
    expect(() =>
      parseTransport(Buffer.from('0400000000000000000000000000000000000000000000000000000000', 'hex')),
    ).toThrow(expect.objectContaining({ code: 'WIRE_TRUNCATED' }));
  });

  it('a non-zero reserved byte makes an unknown type', () => {
    const b = Buffer.alloc(32);
    b[0] = MSG_TRANSPORT;
    expect(messageType(b)).toBe(4);
    for (const i of [1, 2, 3]) {
      const c = Buffer.from(b);
      c[i] = 1;
      expect(() => messageType(c)).toThrow(expect.objectContaining({ code: 'WIRE_BAD_TYPE' }));
    }
  });

  it('property: random and truncated bytes into every parser throw only TunnelError', () => {
    const parsers = [messageType, parseInitiation, parseResponse, parseCookieReply, parseTransport];
    const typed = fc
      .tuple(fc.integer({ min: 0, max: 6 }), fc.uint8Array({ maxLength: 200 }))
      .map(([t, rest]) => Buffer.concat([Buffer.from([t, 0, 0, 0]), rest]));
    const truncatedValid = fc
      .tuple(fc.constantFrom(148, 92, 64, 32, 100), fc.integer({ min: 1, max: 4 }), fc.nat(148))
      .map(([len, t, cut]) => {
        const b = Buffer.alloc(len);
        b[0] = t;
        return b.subarray(0, Math.min(cut, len));
      });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u)),
          typed,
          truncatedValid,
        ),
        (buf) => {
          for (const p of parsers) onlyTunnelErrors(() => p(buf));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
