import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToIp } from '../ip/ip-bytes.js';
import { type AddressScope, addressScope, candidateRefusal, OwnAddresses } from './candidate-address.js';

/** The table of docs/PROTOCOL.md, written as prefixes (an independent reading of it). */
const V4_TABLE: Array<[string, AddressScope]> = [
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'shared'],
];
const V6_TABLE: Array<[string, number, AddressScope]> = [
  ['0000:0000:0000:0000:0000:0000:0000:0000', 128, 'unspecified'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', 128, 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0000', 96, 'reserved'],
  ['ff00:0000:0000:0000:0000:0000:0000:0000', 8, 'multicast'],
  ['fe80:0000:0000:0000:0000:0000:0000:0000', 10, 'link-local'],
  ['fec0:0000:0000:0000:0000:0000:0000:0000', 10, 'reserved'],
  ['fc00:0000:0000:0000:0000:0000:0000:0000', 7, 'unique-local'],
];

function v4Reference(bytes: number[]): AddressScope {
  const value = bytes.reduce((v, b) => v * 256 + b, 0);
  for (const [cidr, scope] of V4_TABLE) {
    const [net = '', len = '0'] = cidr.split('/');
    const network = net.split('.').reduce((v, b) => v * 256 + Number(b), 0);
    const span = 2 ** (32 - Number(len));
    if (value >= network && value < network + span) return scope;
  }
  return 'global';
}

function v6Reference(bytes: Uint8Array): AddressScope {
  const value = BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
  for (const [net, len, scope] of V6_TABLE) {
    const network = BigInt(`0x${net.replaceAll(':', '')}`);
    const shift = BigInt(128 - len);
    if (value >> shift === network >> shift) return scope;
  }
  return 'global';
}

const v4 = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
const none = new OwnAddresses();

describe('addressScope', () => {
  it('classifies IPv4 as the prefix table does, in dotted, IPv4-mapped and NAT64 forms alike', () => {
    fc.assert(
      fc.property(v4, (bytes) => {
        const dotted = bytes.join('.');
        const want = v4Reference(bytes);
        expect(addressScope(dotted)).toBe(want);
        expect(addressScope(`::ffff:${dotted}`)).toBe(want);
        expect(addressScope(`64:ff9b::${dotted}`)).toBe(want);
      }),
      { numRuns: 2_000 },
    );
  });

  it('classifies IPv6 as the prefix table does', () => {
    const interesting = fc.constantFrom(0x00, 0xfc, 0xfd, 0xfe, 0xff, 0x20);
    const v6 = fc.tuple(interesting, fc.uint8Array({ minLength: 15, maxLength: 15 })).map(([first, rest]) => {
      const b = Buffer.concat([Buffer.from([first]), Buffer.from(rest)]);
      return b;
    });
    fc.assert(
      fc.property(v6, (bytes) => {
        const text = bytesToIp(bytes);
        const mapped = bytes.subarray(0, 12).equals(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]));
        const nat64 = bytes
          .subarray(0, 12)
          .equals(Buffer.from([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]));
        const want = mapped || nat64 ? v4Reference([...bytes.subarray(12)]) : v6Reference(bytes);
        expect(addressScope(text)).toBe(want);
      }),
      { numRuns: 2_000 },
    );
  });

  it('is null for anything that is not an IP literal, and never throws', () => {
    for (const s of ['', 'localhost', '1.2.3', '1.2.3.4.5', '256.1.1.1', 'fe80::1%eth0', '::g', ' 10.0.0.1'])
      expect(addressScope(s)).toBeNull();
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const scope = addressScope(s);
        expect(scope === null || typeof scope === 'string').toBe(true);
      }),
    );
  });
});

describe('candidateRefusal', () => {
  const cases: Array<[string, string | null]> = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:255.255.255.255', 'broadcast'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['250.1.2.3', 'reserved'],
    ['::10.0.0.1', 'reserved'],
    ['10.1.2.3', null],
    ['172.16.0.1', null],
    ['172.31.255.254', null],
    ['192.168.1.20', null],
    ['100.64.0.7', null],
    ['fd12::1', null],
    ['::ffff:10.0.0.1', null],
    ['198.51.100.7', null],
    ['2001:db8::20', null],
    ['not-an-ip', 'bad-address'],
  ];
  it.each(cases)('claimed %s: %s', (host, want) => {
    expect(candidateRefusal({ host, port: 41_641 }, { own: none })).toBe(want);
  });

  it('refuses ports outside 1..65535', () => {
    for (const port of [0, -1, 65_536, 1.5, Number.NaN])
      expect(candidateRefusal({ host: '10.0.0.1', port }, { own: none })).toBe('bad-address');
  });

  it("refuses a claimed candidate on any of the node's own hosts; an observed one only at its own endpoint", () => {
    const own = new OwnAddresses([
      { host: '203.0.113.5', port: 51_820 },
      { host: '::ffff:10.0.0.1', port: 51_820 },
    ]);
    expect(candidateRefusal({ host: '203.0.113.5', port: 22 }, { own })).toBe('own-address');
    expect(candidateRefusal({ host: '10.0.0.1', port: 53 }, { own })).toBe('own-address');
    expect(candidateRefusal({ host: '10.0.0.2', port: 51_820 }, { own })).toBeNull();
    expect(candidateRefusal({ host: '10.0.0.1', port: 40_000 }, { own, observed: true })).toBeNull();
    expect(candidateRefusal({ host: '10.0.0.1', port: 51_820 }, { own, observed: true })).toBe('own-address');
  });

  it('allows an observed loopback source (a peer on this host) but no other never-probed scope', () => {
    expect(candidateRefusal({ host: '127.0.0.1', port: 9 }, { own: none, observed: true })).toBeNull();
    expect(candidateRefusal({ host: '::1', port: 9 }, { own: none, observed: true })).toBeNull();
    for (const host of ['0.0.0.0', '224.0.0.1', '255.255.255.255', '169.254.1.1', 'fe80::1'])
      expect(candidateRefusal({ host, port: 9 }, { own: none, observed: true })).not.toBeNull();
  });

  it('refuses every address of a never-probed scope, whatever its form, and allows every private one', () => {
    fc.assert(
      fc.property(v4, fc.integer({ min: 1, max: 65_535 }), (bytes, port) => {
        const scope = v4Reference(bytes);
        for (const host of [bytes.join('.'), `::ffff:${bytes.join('.')}`]) {
          const r = candidateRefusal({ host, port }, { own: none });
          if (scope === 'private' || scope === 'shared' || scope === 'global') expect(r).toBeNull();
          else expect(r).toBe(scope);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
