import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitInnerPacket } from './inner-packet.js';

describe('splitInnerPacket', () => {
  it('cuts IPv4 padding using the total length and refuses lengths outside 20..len', () => {
    const p = Buffer.alloc(48);
    p[0] = 0x45;
    p.writeUInt16BE(33, 2);
    p.set([10, 1, 2, 3], 12);
    const r = splitInnerPacket(p)!;
    expect(r.packet.length).toBe(33);
    expect([...r.source]).toEqual([10, 1, 2, 3]);
    for (const bad of [19, 49, 0]) {
      p.writeUInt16BE(bad, 2);
      expect(splitInnerPacket(p)).toBeNull();
    }
    expect(splitInnerPacket(Buffer.from([0x45]))).toBeNull();
    expect(splitInnerPacket(Buffer.alloc(0))).toBeNull();
    expect(splitInnerPacket(Buffer.alloc(60, 0x50))).toBeNull(); // version 5
  });

  it('property: never throws, never returns more than it was given', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), (u) => {
        const b = Buffer.from(u);
        const r = splitInnerPacket(b);
        if (r) {
          expect(r.packet.length).toBeLessThanOrEqual(b.length);
          expect([4, 16]).toContain(r.source.length);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
