import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ipv6Groups, sourceKey, UNKNOWN_SOURCE } from './ops/http/source-address.js';

const group = fc.integer({ min: 0, max: 0xffff });
const groups = fc.array(group, { minLength: 8, maxLength: 8 });
const hex = (g: number) => g.toString(16);

/** The ways one IPv6 address can be written: full, zero-padded, upper case, compressed, dotted tail, zone. */
function spellings(gs: number[]): string[] {
  const full = gs.map(hex).join(':');
  const padded = gs.map((g) => hex(g).padStart(4, '0')).join(':');
  const canonical = new URL(`http://[${full}]/`).hostname.slice(1, -1);
  const dotted = `${gs.slice(0, 6).map(hex).join(':')}:${[gs[6]! >> 8, gs[6]! & 0xff, gs[7]! >> 8, gs[7]! & 0xff].join('.')}`;
  return [full, padded, padded.toUpperCase(), canonical, dotted, `${canonical}%eth0`];
}

describe('sourceKey over every spelling', () => {
  it('keys every spelling of an IPv6 address by its /64, and only by it', () => {
    fc.assert(
      fc.property(groups, groups, (a, b) => {
        const prefix = `${a.slice(0, 4).map(hex).join(':')}::/64`;
        if (a.slice(0, 6).every((g, i) => g === [0, 0, 0, 0, 0, 0xffff][i])) return; // IPv4-mapped: own property
        for (const text of spellings(a)) {
          expect(ipv6Groups(text)).toEqual(a);
          expect(sourceKey(text)).toBe(prefix);
        }
        const other = [...a.slice(0, 4), ...b.slice(4)];
        expect(sourceKey(spellings(other)[3])).toBe(prefix);
        const samePrefix = a.slice(0, 4).every((g, i) => g === b[i]);
        expect(sourceKey(spellings(b)[0]) === prefix).toBe(samePrefix);
      }),
      { numRuns: 500 },
    );
  });

  it('keys IPv4 and IPv4-mapped IPv6 addresses by the IPv4 address', () => {
    const byte = fc.integer({ min: 0, max: 255 });
    fc.assert(
      fc.property(byte, byte, byte, byte, (a, b, c, d) => {
        const v4 = `${a}.${b}.${c}.${d}`;
        expect(sourceKey(v4)).toBe(v4);
        expect(sourceKey(`::ffff:${v4}`)).toBe(v4);
        expect(sourceKey(`::FFFF:${hex((a << 8) | b)}:${hex((c << 8) | d)}`)).toBe(v4);
      }),
    );
  });

  it('gives anything that is not an address the one unknown key', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const key = sourceKey(text);
        if (key !== UNKNOWN_SOURCE) expect(ipv6Groups(text) !== null || key === text).toBe(true);
      }),
    );
    for (const bad of [undefined, '', 'localhost', '1.2.3', '1:2:3', ':::', '1::2::3', '12345::'])
      expect(sourceKey(bad)).toBe(UNKNOWN_SOURCE);
  });
});
