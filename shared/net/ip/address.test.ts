import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import {
  cidrContains,
  cidrSize,
  formatCidr,
  formatIpv4Address,
  isIpv4Address,
  parseCidr,
  parseIpv4Address,
} from './address.js';

describe('IPv4 addresses and CIDRs', () => {
  it('parses and formats known addresses', () => {
    expect(parseIpv4Address('100.64.0.1')).toBe(0x64400001);
    expect(parseIpv4Address('255.255.255.255')).toBe(0xffffffff);
    expect(formatIpv4Address(0x0a000102)).toBe('10.0.1.2');
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.4.5',
      '256.1.1.1',
      '01.2.3.4',
      '1.2.3.-4',
      ' 1.2.3.4',
      '1.2.3.4 ',
      'a.b.c.d',
    ]) {
      expect(isIpv4Address(bad)).toBe(false);
    }
  });

  it('round-trips every u32 through text', () => {
    fc.assert(
      fc.property(fc.nat({ max: 0xffffffff }), (a) => {
        expect(parseIpv4Address(formatIpv4Address(a))).toBe(a);
      }),
    );
  });

  it('only ever throws BAD_INPUT on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        for (const f of [() => parseIpv4Address(s), () => parseCidr(s), () => parseCidr(s, true)]) {
          try {
            f();
          } catch (e) {
            expect(isTunnelError(e, 'BAD_INPUT')).toBe(true);
          }
        }
      }),
    );
  });

  it('parses CIDRs, clearing host bits unless strict', () => {
    const c = parseCidr('10.1.2.3/16');
    expect(formatCidr(c)).toBe('10.1.0.0/16');
    expect(cidrSize(c)).toBe(65536);
    expect(() => parseCidr('10.1.2.3/16', true)).toThrow(/host bits/);
    expect(formatCidr(parseCidr('0.0.0.0/0'))).toBe('0.0.0.0/0');
    expect(formatCidr(parseCidr('1.2.3.4'))).toBe('1.2.3.4/32');
    expect(() => parseCidr('1.2.3.4/33')).toThrow(/0-32/);
    expect(() => parseCidr('1.2.3.4/08')).toThrow(/0-32/);
  });

  it('contains exactly the addresses sharing the prefix', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 0xffffffff }),
        fc.integer({ min: 0, max: 32 }),
        fc.nat({ max: 0xffffffff }),
        (a, len, b) => {
          const c = parseCidr(`${formatIpv4Address(a)}/${len}`);
          expect(cidrContains(c, a)).toBe(true);
          const shift = 32 - len;
          const same = len === 0 || Math.floor(a / 2 ** shift) === Math.floor(b / 2 ** shift);
          expect(cidrContains(c, b)).toBe(same);
        },
      ),
    );
  });
});
