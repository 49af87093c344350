import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sourceKey } from './source-key.js';

const hex16 = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
const groups8 = fc.array(hex16, { minLength: 8, maxLength: 8 });

describe('sourceKey', () => {
  it('keeps IPv4 addresses, and IPv4-mapped IPv6 ones as IPv4', () => {
    fc.assert(
      fc.property(fc.ipV4(), (a) => {
        expect(sourceKey(a)).toBe(a);
        expect(sourceKey(`::ffff:${a}`)).toBe(a);
      }),
    );
  });

  it('groups IPv6 addresses by /64, whatever their spelling', () => {
    fc.assert(
      fc.property(groups8, groups8, (a, b) => {
        const same = [...a.slice(0, 4), ...b.slice(4)];
        expect(sourceKey(a.join(':'))).toBe(sourceKey(same.join(':')));
        expect(sourceKey(a.join(':'))).toBe(`${a.slice(0, 4).join(':')}::/64`);
        const differs = a.slice(0, 4).join(':') !== b.slice(0, 4).join(':');
        expect(sourceKey(a.join(':')) !== sourceKey(b.join(':'))).toBe(differs);
      }),
    );
    expect(sourceKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('2001:DB8:0:0:ffff::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
    expect(sourceKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(sourceKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('gives null for anything that is not an address', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const k = sourceKey(s);
        if (k !== null) expect(k === s || k.endsWith('::/64') || sourceKey(k) === k).toBe(true);
      }),
    );
    expect(sourceKey(undefined)).toBeNull();
    expect(sourceKey('example.com')).toBeNull();
  });
});
