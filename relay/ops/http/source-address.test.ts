import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { parseSource, sourceKey } from './source-address.js';

const group = fc.integer({ min: 0, max: 0xffff });
const groups = fc.array(group, { minLength: 8, maxLength: 8 });
const hex = (g: number[]) => g.map((x) => x.toString(16));
/** The compressed form the WHATWG URL parser prints: an independent spelling of the same address. */
const compressed = (g: number[]) => new URL(`http://[${hex(g).join(':')}]/`).hostname.slice(1, -1);

describe('sourceKey', () => {
  it('keeps IPv4 and maps IPv4-mapped IPv6 to it', () => {
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        expect(sourceKey(v4)).toBe(v4);
        expect(sourceKey(`::ffff:${v4}`)).toBe(v4);
        expect(sourceKey(`::FFFF:${v4}`)).toBe(v4);
      }),
    );
    expect(sourceKey('::ffff:c000:207')).toBe('192.0.2.7');
  });

  it('counts IPv6 by its /64, whatever the spelling', () => {
    fc.assert(
      fc.property(groups, groups, (a, b) => {
        fc.pre(!(a.slice(0, 6).join() === '0,0,0,0,0,65535'));
        const want = `${hex(a.slice(0, 4)).join(':')}::/64`;
        expect(sourceKey(hex(a).join(':'))).toBe(want);
        expect(sourceKey(compressed(a))).toBe(want);
        // another host in the same /64
        expect(sourceKey(compressed([...a.slice(0, 4), ...b.slice(4)]))).toBe(want);
        expect(parseSource(want)).toBe(want);
      }),
    );
    expect(sourceKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
    expect(sourceKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('parseSource', () => {
  it('accepts addresses and /64 prefixes as the limit keys', () => {
    expect(parseSource('127.0.0.2')).toBe('127.0.0.2');
    expect(parseSource('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(parseSource('2001:db8::7')).toBe('2001:db8:0:0::/64');
    expect(parseSource('2001:db8:0:1::/64')).toBe('2001:db8:0:1::/64');
  });

  it('refuses anything else with BAD_INPUT naming the value', () => {
    for (const bad of [
      '',
      'localhost',
      '127.0.0.256',
      '10.0.0.0/8',
      '2001:db8::/48',
      'fe80::1%eth0',
      'x'.repeat(300),
    ]) {
      let err: unknown;
      try {
        parseSource(bad, '--source');
      } catch (e) {
        err = e;
      }
      expect(isTunnelError(err, 'BAD_INPUT'), bad).toBe(true);
      expect((err as Error).message).toContain('--source');
      expect((err as Error).message.length).toBeLessThan(400);
    }
  });

  it('property: any string is a key or BAD_INPUT, and keys are fixed points', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.ipV4(), fc.ipV6(), fc.ipV4Extended()), (text) => {
        let key: string;
        try {
          key = parseSource(text);
        } catch (e) {
          expect(isTunnelError(e, 'BAD_INPUT')).toBe(true);
          return;
        }
        expect(parseSource(key)).toBe(key);
      }),
      { numRuns: 2000 },
    );
  });
});
