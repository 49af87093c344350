import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { parseIpv4Address } from './address.js';
import {
  buildIpv4Packet,
  IP_PROTO_ICMP,
  ipPacketLength,
  ipv4HeaderChecksumOk,
  parseIpv4Packet,
  writeIpv4Header,
} from './ipv4.js';

// An ICMP echo request captured from the kernel (ping -s 12 10.203.9.1 inside a namespace).
const KERNEL_PING = Buffer.from(
  '45000028a921400040016a1b0acb09020acb09010800c5ca14100001000102030405060708090a0b',
  'hex',
);

function expectOnlyTunnelErrors(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    if (!isTunnelError(e)) throw e;
    expect(['WIRE_TRUNCATED', 'WIRE_BAD_TYPE', 'WIRE_MALFORMED']).toContain(e.code);
  }
}

describe('IPv4 header', () => {
  it('parses a packet captured from the kernel', () => {
    const v = parseIpv4Packet(KERNEL_PING);
    expect(v.totalLength).toBe(40);
    expect(v.headerLength).toBe(20);
    expect(v.protocol).toBe(IP_PROTO_ICMP);
    expect(v.ttl).toBe(64);
    expect(v.id).toBe(0xa921);
    expect(v.dontFragment).toBe(true);
    expect(v.src).toBe(parseIpv4Address('10.203.9.2'));
    expect(v.dst).toBe(parseIpv4Address('10.203.9.1'));
    expect(ipv4HeaderChecksumOk(v)).toBe(true);
    expect(v.payload.length).toBe(20);
  });

  it('rebuilds the kernel packet byte for byte', () => {
    const v = parseIpv4Packet(KERNEL_PING);
    const rebuilt = buildIpv4Packet(
      { src: v.src, dst: v.dst, protocol: v.protocol, ttl: v.ttl, id: v.id, dontFragment: true },
      v.payload,
    );
    expect(rebuilt.equals(KERNEL_PING)).toBe(true);
  });

  it('strips WireGuard padding using the length field', () => {
    const padded = Buffer.concat([KERNEL_PING, Buffer.alloc(8)]);
    expect(ipPacketLength(padded)).toBe(40);
    expect(parseIpv4Packet(padded).packet.length).toBe(40);
    const v6 = Buffer.alloc(64);
    v6[0] = 0x60;
    v6.writeUInt16BE(10, 4);
    expect(ipPacketLength(v6)).toBe(50);
    v6.writeUInt16BE(30, 4);
    expect(() => ipPacketLength(v6)).toThrow(/IPv6 packet/);
  });

  it('validates version, IHL and total length', () => {
    const bad = (mut: (b: Buffer) => void, code: string) => {
      const b = Buffer.from(KERNEL_PING);
      mut(b);
      expect(() => parseIpv4Packet(b)).toThrow(expect.objectContaining({ code }));
    };
    bad((b) => (b[0] = 0x65), 'WIRE_BAD_TYPE');
    bad((b) => (b[0] = 0x44), 'WIRE_MALFORMED');
    bad((b) => b.writeUInt16BE(19, 2), 'WIRE_MALFORMED');
    bad((b) => b.writeUInt16BE(41, 2), 'WIRE_TRUNCATED');
    bad((b) => (b[0] = 0x4f), 'WIRE_MALFORMED'); // IHL 15 = 60 bytes > total 40
    expect(() => parseIpv4Packet(KERNEL_PING.subarray(0, 19))).toThrow(
      expect.objectContaining({ code: 'WIRE_TRUNCATED' }),
    );
  });

  it('round-trips random headers and payloads', () => {
    fc.assert(
      fc.property(
        fc.record({
          src: fc.nat({ max: 0xffffffff }),
          dst: fc.nat({ max: 0xffffffff }),
          protocol: fc.nat({ max: 255 }),
          ttl: fc.nat({ max: 255 }),
          id: fc.nat({ max: 0xffff }),
          dontFragment: fc.boolean(),
          tos: fc.nat({ max: 255 }),
        }),
        fc.uint8Array({ maxLength: 1500 }),
        (f, payload) => {
          const p = buildIpv4Packet(f, payload);
          const v = parseIpv4Packet(p);
          expect(ipv4HeaderChecksumOk(v)).toBe(true);
          expect({ ...v, packet: undefined, payload: undefined, checksum: undefined }).toMatchObject({
            ...f,
          });
          expect(v.payload.equals(Buffer.from(payload))).toBe(true);
          expect(ipPacketLength(p)).toBe(p.length);
        },
      ),
    );
  });

  it('only ever throws TunnelError on random, truncated or mutated bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (raw) => {
        const b = Buffer.from(raw);
        expectOnlyTunnelErrors(() => parseIpv4Packet(b));
        expectOnlyTunnelErrors(() => ipPacketLength(b));
      }),
    );
    fc.assert(
      fc.property(fc.nat({ max: 40 }), fc.nat({ max: 39 }), fc.nat({ max: 255 }), (cut, at, val) => {
        const b = Buffer.from(KERNEL_PING);
        b[at] = val;
        expectOnlyTunnelErrors(() => parseIpv4Packet(b.subarray(0, cut)));
        expectOnlyTunnelErrors(() => parseIpv4Packet(b));
      }),
    );
  });

  it('refuses to build out-of-range fields with BAD_INPUT', () => {
    expect(() => buildIpv4Packet({ src: -1, dst: 0, protocol: 17 }, Buffer.alloc(0))).toThrow(
      expect.objectContaining({ code: 'BAD_INPUT' }),
    );
    expect(() => buildIpv4Packet({ src: 0, dst: 0, protocol: 256 }, Buffer.alloc(0))).toThrow(/protocol/);
    expect(() => buildIpv4Packet({ src: 0, dst: 0, protocol: 1 }, Buffer.alloc(65516))).toThrow(/over/);
    expect(() => writeIpv4Header(Buffer.alloc(10), 0, { src: 0, dst: 0, protocol: 1 }, 20)).toThrow(/fit/);
  });
});
