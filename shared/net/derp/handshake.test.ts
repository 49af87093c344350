import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { generateKeyPair } from '../../keys.js';
import { FRAME_HEADER_LEN, FrameType, frameBody } from './frames.js';
import {
  decodeClientInfo,
  decodeServerInfo,
  encodeClientInfo,
  encodeServerInfo,
  sharedKey,
} from './handshake.js';

const server = generateKeyPair();
const client = generateKeyPair();

describe('handshake', () => {
  it('seals ClientInfo so only the server opens it, and proves the client key', () => {
    const challenge = Buffer.alloc(16, 0x5a);
    const f = encodeClientInfo(client.publicKey, sharedKey(server.publicKey, client.privateKey), challenge);
    expect(f[0]).toBe(FrameType.ClientInfo);
    expect(f.subarray(FRAME_HEADER_LEN, FRAME_HEADER_LEN + 32).equals(client.publicKey)).toBe(true);
    const opened = decodeClientInfo(frameBody(f), server.privateKey);
    expect(opened.clientKey.equals(client.publicKey)).toBe(true);
    expect(opened.info).toEqual({ version: 2, challenge: '5a'.repeat(16), canAckPings: true });

    // ServerInfo sealed with the server side's shared key opens with the client side's.
    const si = encodeServerInfo(opened.key);
    expect(decodeServerInfo(frameBody(si), sharedKey(server.publicKey, client.privateKey))).toEqual({
      version: 2,
    });
  });

  it('refuses a ClientInfo whose claimed key is not the sealing key (DERP_AUTH_FAILED)', () => {
    const other = generateKeyPair();
    // Sealed with `other`'s private key but claims `client`'s public key.
    const f = encodeClientInfo(
      client.publicKey,
      sharedKey(server.publicKey, other.privateKey),
      Buffer.alloc(0),
    );
    expect(() => decodeClientInfo(frameBody(f), server.privateKey)).toThrow(
      expect.objectContaining({ code: 'DERP_AUTH_FAILED' }),
    );
  });

  it('refuses a tampered box and one sealed to another server', () => {
    const f = encodeClientInfo(
      client.publicKey,
      sharedKey(server.publicKey, client.privateKey),
      Buffer.alloc(0),
    );
    const t = Buffer.from(f);
    t[t.length - 1] = t[t.length - 1]! ^ 1;
    expect(() => decodeClientInfo(frameBody(t), server.privateKey)).toThrow(/does not open/);
    expect(() => decodeClientInfo(frameBody(f), generateKeyPair().privateKey)).toThrow(/does not open/);
  });

  it('matches JSON field names case-insensitively, as Go clients send them', () => {
    const key = sharedKey(server.publicKey, client.privateKey);
    const nonce = nacl.randomBytes(24);
    const box = nacl.box.after(Buffer.from('{"Version":2,"CanAckPings":false,"MeshKey":"x"}'), nonce, key);
    const body = Buffer.concat([client.publicKey, nonce, box]);
    expect(decodeClientInfo(body, server.privateKey).info).toEqual({ version: 2, canAckPings: false });
  });

  it('rejects JSON that is not an object or has a bad version', () => {
    const key = sharedKey(server.publicKey, client.privateKey);
    for (const text of ['[1]', 'null', 'nope', '{"version":-1}', '{"version":"2"}']) {
      const nonce = nacl.randomBytes(24);
      const body = Buffer.concat([client.publicKey, nonce, nacl.box.after(Buffer.from(text), nonce, key)]);
      expect(() => decodeClientInfo(body, server.privateKey)).toThrow(
        expect.objectContaining({ code: 'DERP_PROTOCOL' }),
      );
    }
  });

  it('property: sharedKey equals nacl.box.before from both sides', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (a, b) => {
          const pa = nacl.scalarMult.base(a);
          const pb = nacl.scalarMult.base(b);
          const k = sharedKey(pb, a);
          expect(Buffer.from(k).equals(Buffer.from(nacl.box.before(pb, a)))).toBe(true);
          expect(Buffer.from(sharedKey(pa, b)).equals(Buffer.from(k))).toBe(true);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('refuses a low-order public key with DERP_AUTH_FAILED', () => {
    expect(() => sharedKey(new Uint8Array(32), client.privateKey)).toThrow(
      expect.objectContaining({ code: 'DERP_AUTH_FAILED' }),
    );
  });

  it('property: random ClientInfo/ServerInfo bodies only throw TunnelError', () => {
    const key = sharedKey(server.publicKey, client.privateKey);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        for (const f of [
          () => decodeClientInfo(Buffer.from(bytes), server.privateKey),
          () => decodeServerInfo(Buffer.from(bytes), key),
        ]) {
          try {
            f();
          } catch (e) {
            expect(isTunnelError(e)).toBe(true);
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});
