import { isIPv6 } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesToIp,
  ipToBytes,
  ipToFamilyBytes,
  ipToSocketBytes,
  isV4Mapped,
  normalizeIp,
} from './ip-bytes.js';

describe('ip-bytes', () => {
  it('maps IPv4 into ::ffff:0:0/96 and back', () => {
    expect(ipToBytes('192.0.2.7')?.toString('hex')).toBe('00000000000000000000ffffc0000207');
    expect(bytesToIp(Buffer.from('00000000000000000000ffffc0000207', 'hex'))).toBe('192.0.2.7');
  });

  it('reads IPv6 forms: ::, a dotted tail, full', () => {
    expect(ipToBytes('::1')?.toString('hex')).toBe('00000000000000000000000000000001');
    expect(ipToBytes('2001:db8::8:800:200c:417a')?.toString('hex')).toBe('20010db80000000000080800200c417a');
    expect(ipToBytes('::ffff:10.1.2.3')?.toString('hex')).toBe('00000000000000000000ffff0a010203');
    expect(ipToBytes('64:ff9b::192.0.2.33')?.toString('hex')).toBe('0064ff9b0000000000000000c0000221');
    expect(ipToBytes('fe80:0:0:0:0:0:0:1')?.toString('hex')).toBe('fe800000000000000000000000000001');
  });

  it('writes RFC 5952 text', () => {
    expect(bytesToIp(Buffer.from('20010db80000000000080800200c417a', 'hex'))).toBe(
      '2001:db8::8:800:200c:417a',
    );
    expect(bytesToIp(Buffer.alloc(16))).toBe('::');
    expect(bytesToIp(Buffer.from('20010db8000100000001000100010001', 'hex'))).toBe('2001:db8:1:0:1:1:1:1');
  });

  it('refuses names, zone ids and junk', () => {
    for (const t of ['example.com', 'fe80::1%eth0', '1.2.3', '', '::g', '1.2.3.256'])
      expect(ipToBytes(t)).toBeNull();
  });

  it('round-trips any 16 bytes through text (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (raw) => {
        const text = bytesToIp(raw);
        expect(ipToBytes(text)?.equals(Buffer.from(raw))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips any IPv4 through its mapped bytes (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (text) => {
        const bytes = ipToBytes(text);
        expect(bytes && isV4Mapped(bytes)).toBe(true);
        expect(bytesToIp(bytes!)).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with node:net on which strings are addresses (property)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (text) => {
        expect(isIPv6(text)).toBe(true);
        const bytes = ipToBytes(text);
        expect(bytes).not.toBeNull();
        expect(ipToBytes(bytesToIp(bytes!))?.equals(bytes!)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('ipToFamilyBytes', () => {
  it('reads IPv4, v4-mapped, compressed and zoned IPv6, and refuses names', () => {
    expect([...(ipToFamilyBytes('192.0.2.7') ?? [])]).toEqual([192, 0, 2, 7]);
    expect([...(ipToFamilyBytes('::ffff:10.0.0.1') ?? [])]).toEqual([10, 0, 0, 1]);
    expect(ipToFamilyBytes('2001:db8::1')?.toString('hex')).toBe('20010db8000000000000000000000001');
    expect(ipToFamilyBytes('fe80::1%eth0')?.toString('hex')).toBe('fe800000000000000000000000000001');
    expect(ipToFamilyBytes('::')?.toString('hex')).toBe('0'.repeat(32));
    expect(ipToFamilyBytes('64:ff9b::192.0.2.33')?.toString('hex')).toBe('0064ff9b0000000000000000c0000221');
    expect(ipToFamilyBytes('relay.example.com')).toBeNull();
    expect(ipToFamilyBytes('%eth0')).toBeNull();
  });

  it('gives an IPv4 sender its 4 octets however it is written (property)', () => {
    const octets = fc.uint8Array({ minLength: 4, maxLength: 4 });
    fc.assert(
      fc.property(octets, fc.constantFrom('', '%eth0'), (raw, zone) => {
        const dotted = [...raw].join('.');
        for (const text of [dotted, `::ffff:${dotted}`, `::FFFF:${dotted}${zone}`])
          expect([...(ipToFamilyBytes(text) ?? [])]).toEqual([...raw]);
      }),
      { numRuns: 1000 },
    );
  });

  it('gives any other IPv6 address its 16 bytes, zone id or not (property)', () => {
    const address = fc.uint8Array({ minLength: 16, maxLength: 16 }).filter((raw) => !isV4Mapped(raw));
    fc.assert(
      fc.property(address, fc.constantFrom('', '%eth0', '%1'), (raw, zone) => {
        expect(ipToFamilyBytes(`${bytesToIp(raw)}${zone}`)?.equals(Buffer.from(raw))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('normalizeIp', () => {
  it('gives one text per address', () => {
    expect(normalizeIp('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(normalizeIp('2001:DB8:0:0::1')).toBe('2001:db8::1');
    expect(normalizeIp('nope')).toBeNull();
  });

  it('gives a socket of each family its sockaddr bytes, none for IPv6 on IPv4 (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (text) => {
        const mapped = ipToBytes(text);
        expect(ipToSocketBytes(text, 6)).toEqual(mapped);
        expect(ipToSocketBytes(text, 4)).toEqual(mapped?.subarray(12));
      }),
    );
    fc.assert(
      fc.property(fc.ipV6(), (text) => {
        const bytes = ipToBytes(text);
        expect(ipToSocketBytes(text, 6)).toEqual(bytes);
        expect(ipToSocketBytes(text, 4)).toEqual(bytes && isV4Mapped(bytes) ? bytes.subarray(12) : null);
      }),
    );
    expect(ipToSocketBytes('not-an-address', 4)).toBeNull();
  });
});
