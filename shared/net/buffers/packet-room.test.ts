import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { allocPacket, grantRoom, growPacket, headroomOf, MAX_ROOM, tailroomOf } from './packet-room.js';

describe('packet room', () => {
  it('allocates a view with its own memory and the room granted around it', () => {
    const p = allocPacket(100, 40, 8);
    expect(p.length).toBe(100);
    expect(p.byteOffset).toBe(40);
    expect(p.buffer.byteLength).toBe(148);
    expect([headroomOf(p), tailroomOf(p)]).toEqual([40, 8]);
  });

  it('grows into the room, moves the rest of the grant to the grown view and revokes the old one', () => {
    const p = allocPacket(10, 30, 20);
    p.fill(7);
    const g = growPacket(p, 12, 5);
    expect(g).not.toBeNull();
    expect(g!.buffer).toBe(p.buffer);
    expect(g!.byteOffset).toBe(18);
    expect(g!.length).toBe(27);
    expect(g!.subarray(12, 22).equals(Buffer.alloc(10, 7))).toBe(true);
    expect([headroomOf(g!), tailroomOf(g!)]).toEqual([18, 15]);
    expect([headroomOf(p), tailroomOf(p)]).toEqual([0, 0]);
    expect(growPacket(p, 1, 0)).toBeNull(); // used once
    const all = growPacket(g!, 18, 15)!;
    expect(all.length).toBe(60);
    expect(headroomOf(all) + tailroomOf(all)).toBe(0);
    expect(growPacket(all, 0, 0)).toBeNull(); // nothing left: no grant at all
  });

  it('refuses more room than granted and leaves the grant in place', () => {
    const p = allocPacket(10, 4, 4);
    expect(growPacket(p, 5, 0)).toBeNull();
    expect(growPacket(p, 0, 5)).toBeNull();
    expect(growPacket(p, -1, 0)).toBeNull();
    expect([headroomOf(p), tailroomOf(p)]).toEqual([4, 4]);
    expect(growPacket(p, 4, 4)?.length).toBe(18);
  });

  it('gives plain, pooled and derived views no room', () => {
    const plain = Buffer.alloc(64);
    const pooled = Buffer.from('pooled bytes: the pool owns what is around them');
    const p = allocPacket(32, 16, 16);
    const sub = p.subarray(0, 16);
    const same = Buffer.from(p.buffer, p.byteOffset, p.length); // same memory, another view object
    for (const b of [plain, pooled, sub, same, new Uint8Array(8)]) {
      expect(headroomOf(b)).toBe(0);
      expect(growPacket(b, 1, 0)).toBeNull();
    }
    expect(headroomOf(p)).toBe(16);
  });

  it('grantRoom checks that the room lies inside the buffer and within range', () => {
    const raw = Buffer.allocUnsafeSlow(64);
    const v = raw.subarray(8, 40);
    expect(grantRoom(v, 8, 24)).toBe(v);
    expect([headroomOf(v), tailroomOf(v)]).toEqual([8, 24]);
    for (const [h, t] of [
      [9, 0],
      [0, 25],
      [-1, 0],
      [1.5, 0],
      [MAX_ROOM + 1, 0],
    ] as const) {
      let err: unknown;
      try {
        grantRoom(v, h, t);
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
    }
    grantRoom(v, 0, 0);
    expect(growPacket(v, 0, 0)).toBeNull(); // a zero grant is no grant
  });

  it('property: growing never leaves the allocation and keeps the packet bytes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.array(fc.tuple(fc.integer({ min: -2, max: 200 }), fc.integer({ min: -2, max: 200 })), {
          maxLength: 6,
        }),
        (len, head, tail, steps) => {
          let v = allocPacket(len, head, tail);
          for (let i = 0; i < len; i++) v[i] = i & 0xff;
          let start = head;
          let end = head + len;
          for (const [b, a] of steps) {
            const h = headroomOf(v);
            const t = tailroomOf(v);
            const g = growPacket(v, b, a);
            const fits = b >= 0 && a >= 0 && b <= h && a <= t && h + t > 0;
            expect(g !== null).toBe(fits);
            if (!g) continue;
            start -= b;
            end += a;
            expect(g.byteOffset).toBe(start);
            expect(g.byteOffset + g.length).toBe(end);
            expect(start).toBeGreaterThanOrEqual(0);
            expect(end).toBeLessThanOrEqual(head + len + tail);
            expect(headroomOf(g)).toBe(start);
            expect(tailroomOf(g)).toBe(head + len + tail - end);
            v = g;
          }
          for (let i = 0; i < len; i++) expect(v[head - start + i]).toBe(i & 0xff);
        },
      ),
    );
  });
});
