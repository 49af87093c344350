import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocPacket, headroomOf, tailroomOf } from '../buffers/packet-room.js';
import { pickStreamDatagram, streamDatagramRoom, wrapStreamDatagram } from './inner-udp.js';

const SRC = 0x64400001;
const overlaps = (a: Buffer, b: Buffer): boolean =>
  a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;
const DST = 0x64400002;

describe('wrapStreamDatagram', () => {
  it('property: headers written in the room are byte-identical to the copied packet', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4000 }), fc.integer({ min: 0, max: 100 }), (bytes, extra) => {
        const expected = wrapStreamDatagram(SRC, DST, Buffer.from(bytes));
        const d = allocPacket(bytes.length, 28 + extra, 9);
        d.set(bytes);
        const p = wrapStreamDatagram(SRC, DST, d);
        expect(p.equals(expected)).toBe(true);
        expect(p.buffer).toBe(d.buffer);
        expect([headroomOf(p), tailroomOf(p)]).toEqual([extra, 9]);
        const picked = pickStreamDatagram(p, DST);
        expect(typeof picked === 'object' && picked.payload.equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('copies a plain datagram and one with too little room, leaving them untouched', () => {
    const bytes = randomBytes(100);
    const expected = wrapStreamDatagram(SRC, DST, Buffer.from(bytes));
    for (const d of [Buffer.from(bytes), allocPacket(100, 27, 100).fill(bytes)]) {
      const p = wrapStreamDatagram(SRC, DST, d);
      expect(p.equals(expected)).toBe(true);
      expect(overlaps(p, d)).toBe(false);
      expect(d.equals(bytes)).toBe(true);
    }
  });
});

describe('streamDatagramRoom', () => {
  it('property: adds the inner IPv4/UDP header to the room below and takes it from the MTU', () => {
    fc.assert(
      fc.property(fc.nat(65_535), fc.nat(1000), fc.nat(1000), (mtu, headroom, tailroom) => {
        expect(streamDatagramRoom({ mtu, headroom, tailroom })).toEqual({
          mtu: mtu - 28,
          headroom: headroom + 28,
          tailroom,
        });
      }),
    );
  });
});
