import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { allocPacket, headroomOf } from '../buffers/packet-room.js';
import {
  decodeHealth,
  decodePacket,
  decodePeerGone,
  decodePeerPresent,
  decodePing,
  decodeRestarting,
  decodeServerKey,
  encodeHealth,
  encodePeerGone,
  encodePeerPresent,
  encodePing,
  encodeRecvPacket,
  encodeRestarting,
  encodeSendPacket,
  encodeSendPacketInPlace,
  encodeServerKey,
  FrameType,
  frameBody,
  MAGIC,
  MAX_PACKET_LEN,
  PeerGoneReason,
  SEND_PACKET_HEADROOM,
} from './frames.js';

const key = (b: number) => Buffer.alloc(32, b);

describe('frames', () => {
  it('lays out SendPacket byte by byte', () => {
    const f = encodeSendPacket(key(0xaa), Buffer.from([1, 2, 3]));
    expect(f.toString('hex')).toBe(`0400000023${'aa'.repeat(32)}010203`);
  });

  it('lays out ServerKey with the DERP magic, key and challenge', () => {
    const f = encodeServerKey(key(0x11), Buffer.alloc(16, 0x22));
    expect(f.subarray(0, 5).toString('hex')).toBe('0100000038');
    expect(f.subarray(5, 13).toString('hex')).toBe('44455250f09f9491');
    const d = decodeServerKey(frameBody(f));
    expect(d.serverKey.equals(key(0x11))).toBe(true);
    expect(d.challenge.equals(Buffer.alloc(16, 0x22))).toBe(true);
  });

  it('accepts a plain 40-byte ServerKey without a challenge and rejects a bad magic', () => {
    const body = Buffer.concat([MAGIC, key(5)]);
    expect(decodeServerKey(body).challenge.length).toBe(0);
    const bad = Buffer.from(body);
    bad[0] = 0x45;
    expect(() => decodeServerKey(bad)).toThrow(/magic/);
    expect(() => decodeServerKey(body.subarray(0, 39))).toThrow(/expected 40/);
  });

  it('round-trips packets, and refuses payloads over 65,535 bytes', () => {
    const payload = Buffer.alloc(MAX_PACKET_LEN, 7);
    const f = encodeRecvPacket(key(3), payload);
    expect(f[0]).toBe(FrameType.RecvPacket);
    const d = decodePacket(frameBody(f));
    expect(d.key.equals(key(3))).toBe(true);
    expect(d.payload.equals(payload)).toBe(true);
    expect(() => encodeSendPacket(key(3), Buffer.alloc(MAX_PACKET_LEN + 1))).toThrow(/limit 65535/);
    const big = Buffer.alloc(32 + MAX_PACKET_LEN + 1);
    expect(() => decodePacket(big)).toThrow(/limit/);
    expect(() => decodePacket(Buffer.alloc(31))).toThrow(/need >= 32/);
  });

  it('round-trips ping, peer gone, peer present, health and restarting', () => {
    const data = Buffer.from('01234567');
    expect(decodePing(frameBody(encodePing(FrameType.Pong, data))).equals(data)).toBe(true);
    expect(decodePing(Buffer.alloc(1000, 1)).length).toBe(8);
    expect(() => decodePing(Buffer.alloc(7))).toThrow(/8\.\.1000/);
    expect(() => decodePing(Buffer.alloc(1001))).toThrow(/8\.\.1000/);

    const pg = decodePeerGone(frameBody(encodePeerGone(key(9), PeerGoneReason.NotHere)));
    expect(pg.peer.equals(key(9))).toBe(true);
    expect(pg.reason).toBe(PeerGoneReason.NotHere);
    expect(decodePeerGone(key(9)).reason).toBe(PeerGoneReason.Disconnected);

    expect(decodePeerPresent(frameBody(encodePeerPresent(key(4)))).equals(key(4))).toBe(true);
    expect(decodeHealth(frameBody(encodeHealth('duplicate key ✓')))).toBe('duplicate key ✓');

    const r = encodeRestarting({ reconnectInMs: 1500, tryForMs: 0xfffffffe });
    expect(r.toString('hex')).toBe('1500000008000005dcfffffffe');
    expect(decodeRestarting(frameBody(r))).toEqual({ reconnectInMs: 1500, tryForMs: 0xfffffffe });
  });

  it('property: every body decoder only ever throws TunnelError on random bytes', () => {
    const decoders = [
      decodeServerKey,
      decodePacket,
      decodePeerGone,
      decodePeerPresent,
      decodePing,
      decodeRestarting,
    ];
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1100 }), (bytes) => {
        for (const d of decoders) {
          try {
            d(Buffer.from(bytes));
          } catch (e) {
            expect(isTunnelError(e)).toBe(true);
          }
        }
      }),
    );
  });

  it('property: SendPacket built in the room before a payload is byte-identical to the copied frame', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3000 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.integer({ min: 0, max: 64 }),
        (bytes, dst, extra) => {
          const expected = encodeSendPacket(dst, Buffer.from(bytes));
          const p = allocPacket(bytes.length, SEND_PACKET_HEADROOM + extra, 0);
          p.set(bytes);
          const f = encodeSendPacket(dst, p);
          expect(f.equals(expected)).toBe(true);
          expect(f.buffer).toBe(p.buffer);
          expect(f.byteOffset + f.length).toBe(p.byteOffset + p.length);
          expect(headroomOf(f)).toBe(extra);
          expect(decodePacket(frameBody(f)).payload.equals(Buffer.from(bytes))).toBe(true);
        },
      ),
    );
  });

  it('encodeSendPacketInPlace returns null without enough room, a plain buffer or a bad key; the fallback copies', () => {
    const short = allocPacket(10, SEND_PACKET_HEADROOM - 1, 0);
    expect(encodeSendPacketInPlace(key(1), short)).toBeNull();
    expect(encodeSendPacketInPlace(key(1), Buffer.alloc(10))).toBeNull();
    const roomy = allocPacket(10, SEND_PACKET_HEADROOM, 0);
    expect(encodeSendPacketInPlace(Buffer.alloc(31), roomy)).toBeNull();
    expect(headroomOf(roomy)).toBe(SEND_PACKET_HEADROOM); // still granted: a bad key never touches it
    const copied = encodeSendPacket(key(1), short.fill(5));
    expect(copied.buffer).not.toBe(short.buffer);
    expect(copied.toString('hex')).toBe(`040000002a${'01'.repeat(32)}${'05'.repeat(10)}`);
    const big = allocPacket(MAX_PACKET_LEN + 1, SEND_PACKET_HEADROOM, 0);
    expect(() => encodeSendPacketInPlace(key(1), big)).toThrow(/limit 65535/);
  });
});
