import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { parseIpv4Address } from './address.js';
import {
  buildEchoReplyFor,
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from './icmp.js';
import { ipv4HeaderChecksumOk, parseIpv4Packet } from './ipv4.js';
import {
  buildUdpPacket,
  parseUdp,
  UDP_MAX_PAYLOAD_AT_MTU_1420,
  udpChecksumOk,
  writeUdpHeaders,
  writeUdpPacket,
} from './udp.js';

// Captured from the kernel: `ping -c 1 -s 12 10.203.9.1` and `ping -s 16` (timestamped) from a namespace.
const KERNEL_PING_12 = Buffer.from(
  '45000028a921400040016a1b0acb09020acb09010800c5ca14100001000102030405060708090a0b',
  'hex',
);
const KERNEL_PING_16 = Buffer.from(
  '4500002c105c4000400102dd0acb09020acb090108007ca412f200013e30026b000000001dcd0a0000000000',
  'hex',
);

function onlyWireErrors(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    if (!isTunnelError(e)) throw e;
    expect(e.code.startsWith('WIRE_')).toBe(true);
  }
}

const addr = fc.nat({ max: 0xffffffff });
const port = fc.nat({ max: 0xffff });

describe('ICMP echo', () => {
  it('parses kernel pings and verifies their checksums', () => {
    for (const [pkt, id, seq] of [
      [KERNEL_PING_12, 0x1410, 1],
      [KERNEL_PING_16, 0x12f2, 1],
    ] as const) {
      const e = parseIcmpEcho(parseIpv4Packet(pkt));
      expect(e.type).toBe(ICMP_ECHO_REQUEST);
      expect(e.identifier).toBe(id);
      expect(e.sequence).toBe(seq);
      expect(e.checksumOk).toBe(true);
    }
    const corrupt = Buffer.from(KERNEL_PING_12);
    corrupt[corrupt.length - 1] = corrupt[corrupt.length - 1]! ^ 1;
    expect(parseIcmpEcho(parseIpv4Packet(corrupt)).checksumOk).toBe(false);
  });

  it('rebuilds the kernel ping byte for byte', () => {
    const ip = parseIpv4Packet(KERNEL_PING_12);
    const e = parseIcmpEcho(ip);
    const built = buildIcmpEchoPacket(
      {
        src: ip.src,
        dst: ip.dst,
        type: ICMP_ECHO_REQUEST,
        identifier: e.identifier,
        sequence: e.sequence,
        id: ip.id,
      },
      e.data,
    );
    expect(built.equals(KERNEL_PING_12)).toBe(true);
  });

  it('builds the matching echo reply', () => {
    const req = parseIpv4Packet(KERNEL_PING_16);
    const reply = parseIpv4Packet(buildEchoReplyFor(req));
    expect(reply.src).toBe(req.dst);
    expect(reply.dst).toBe(req.src);
    expect(ipv4HeaderChecksumOk(reply)).toBe(true);
    const e = parseIcmpEcho(reply);
    expect(e.type).toBe(ICMP_ECHO_REPLY);
    expect(e.checksumOk).toBe(true);
    expect(e.data.equals(parseIcmpEcho(req).data)).toBe(true);
    expect(() => buildEchoReplyFor(reply)).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
  });

  it('round-trips random echoes', () => {
    fc.assert(
      fc.property(
        addr,
        addr,
        fc.boolean(),
        port,
        port,
        fc.uint8Array({ maxLength: 1400 }),
        (s, d, rq, id, seq, data) => {
          const type = rq ? ICMP_ECHO_REQUEST : ICMP_ECHO_REPLY;
          const e = parseIcmpEcho(
            parseIpv4Packet(
              buildIcmpEchoPacket({ src: s, dst: d, type, identifier: id, sequence: seq }, data),
            ),
          );
          expect(e).toMatchObject({ type, identifier: id, sequence: seq, checksumOk: true });
          expect(e.data.equals(Buffer.from(data))).toBe(true);
        },
      ),
    );
  });

  it('rejects non-echo ICMP and other protocols', () => {
    const b = Buffer.from(KERNEL_PING_12);
    b[20] = 3; // destination unreachable
    expect(() => parseIcmpEcho(parseIpv4Packet(b))).toThrow(
      expect.objectContaining({ code: 'WIRE_BAD_TYPE' }),
    );
    const udp = parseIpv4Packet(buildUdpPacket({ src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.alloc(0)));
    expect(() => parseIcmpEcho(udp)).toThrow(expect.objectContaining({ code: 'WIRE_BAD_TYPE' }));
  });
});

describe('UDP', () => {
  it('builds a known datagram with the checksum the kernel would use', () => {
    // The kernel's datagram for `echo hello | socat - UDP:10.203.9.1:5555,sourceport=4444`, whose UDP
    // checksum field was left as the un-complemented pseudo-header partial sum 0x27b8 (veth offload).
    const kernel = Buffer.from('45000022c21c4000401151160acb09020acb0901115c15b3000e27b868656c6c6f0a', 'hex');
    const ip = parseIpv4Packet(kernel);
    const u = parseUdp(ip);
    expect(u).toMatchObject({ srcPort: 4444, dstPort: 5555, length: 14 });
    expect(u.payload.toString()).toBe('hello\n');
    const built = buildUdpPacket(
      {
        src: parseIpv4Address('10.203.9.2'),
        dst: parseIpv4Address('10.203.9.1'),
        srcPort: 4444,
        dstPort: 5555,
        id: 0xc21c,
      },
      Buffer.from('hello\n'),
    );
    // Identical except the checksum field: ours is complete and verifies; it equals the partial
    // sum folded with the data words and complemented.
    expect(built.subarray(0, 26).equals(kernel.subarray(0, 26))).toBe(true);
    expect(built.subarray(28).equals(kernel.subarray(28))).toBe(true);
    const folded = 0x27b8 + 0x115c + 0x15b3 + 0x000e + 0x6865 + 0x6c6c + 0x6f0a;
    expect(built.readUInt16BE(26)).toBe(~((folded & 0xffff) + (folded >>> 16)) & 0xffff);
    const bv = parseIpv4Packet(built);
    expect(udpChecksumOk(bv, parseUdp(bv))).toBe(true);
  });

  it('round-trips random datagrams, checksum verifying, and detects corruption', () => {
    fc.assert(
      fc.property(
        addr,
        addr,
        port,
        port,
        fc.uint8Array({ maxLength: UDP_MAX_PAYLOAD_AT_MTU_1420 }),
        fc.nat(),
        (s, d, sp, dp, data, flip) => {
          const p = buildUdpPacket({ src: s, dst: d, srcPort: sp, dstPort: dp }, data);
          const ip = parseIpv4Packet(p);
          const u = parseUdp(ip);
          expect(u).toMatchObject({ srcPort: sp, dstPort: dp, length: 8 + data.length });
          expect(u.checksum).not.toBe(0);
          expect(udpChecksumOk(ip, u)).toBe(true);
          expect(u.payload.equals(Buffer.from(data))).toBe(true);
          if (data.length > 0) {
            const bit = flip % (data.length * 8);
            p[28 + (bit >> 3)] = p[28 + (bit >> 3)]! ^ (1 << (bit & 7));
            const ip2 = parseIpv4Packet(p);
            expect(udpChecksumOk(ip2, parseUdp(ip2))).toBe(false);
          }
        },
      ),
    );
  });

  it('writes at an offset, leaving headroom untouched', () => {
    const out = Buffer.alloc(16 + 28 + 3, 0xaa);
    const n = writeUdpPacket(out, 16, { src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.from('abc'));
    expect(n).toBe(31);
    expect(out.subarray(0, 16).every((x) => x === 0xaa)).toBe(true);
    expect(parseUdp(parseIpv4Packet(out.subarray(16))).payload.toString()).toBe('abc');
    expect(() =>
      writeUdpPacket(out, 17, { src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.from('abc')),
    ).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    expect(() => buildUdpPacket({ src: 1, dst: 2, srcPort: 70000, dstPort: 4 }, Buffer.alloc(0))).toThrow(
      /port/,
    );
  });

  it('writes headers around a payload already in place, with or without a checksum', () => {
    fc.assert(
      fc.property(
        addr,
        addr,
        port,
        port,
        fc.uint8Array({ maxLength: 1392 }),
        fc.nat(32),
        (s, d, sp, dp, data, head) => {
          const out = Buffer.alloc(head + 28 + data.length);
          out.set(data, head + 28);
          const f = { src: s, dst: d, srcPort: sp, dstPort: dp };
          expect(writeUdpHeaders(out, head, f, data.length)).toBe(28 + data.length);
          expect(out.subarray(head).equals(buildUdpPacket(f, data))).toBe(true);
          writeUdpHeaders(out, head, { ...f, checksum: false }, data.length);
          const ip = parseIpv4Packet(out.subarray(head));
          const u = parseUdp(ip);
          expect(u.checksum).toBe(0);
          expect(udpChecksumOk(ip, u)).toBe(true);
          expect(u.payload.equals(Buffer.from(data))).toBe(true);
        },
      ),
    );
    expect(() => writeUdpHeaders(Buffer.alloc(30), 0, { src: 1, dst: 2, srcPort: 3, dstPort: 4 }, 3)).toThrow(
      /fit/,
    );
    expect(() =>
      writeUdpHeaders(Buffer.alloc(99), 0, { src: 1, dst: 2, srcPort: 3, dstPort: 4 }, -1),
    ).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
  });

  it('validates the UDP length field', () => {
    const p = buildUdpPacket({ src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.from('abcd'));
    p.writeUInt16BE(7, 24);
    expect(() => parseUdp(parseIpv4Packet(p))).toThrow(expect.objectContaining({ code: 'WIRE_MALFORMED' }));
    p.writeUInt16BE(13, 24);
    expect(() => parseUdp(parseIpv4Packet(p))).toThrow(expect.objectContaining({ code: 'WIRE_TRUNCATED' }));
    expect(() => parseUdp(parseIpv4Packet(KERNEL_PING_12))).toThrow(
      expect.objectContaining({ code: 'WIRE_BAD_TYPE' }),
    );
    const frag = buildUdpPacket({ src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.from('abcd'));
    frag.writeUInt16BE(0x2000, 6); // MF
    expect(() => parseUdp(parseIpv4Packet(frag))).toThrow(/fragment/);
    frag.writeUInt16BE(0x0001, 6); // offset 8
    expect(() => parseUdp(parseIpv4Packet(frag))).toThrow(/fragment/);
  });

  it('parsers only ever throw wire TunnelErrors on random or truncated bytes', () => {
    const udp = buildUdpPacket({ src: 1, dst: 2, srcPort: 3, dstPort: 4 }, Buffer.from('payload'));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat({ max: 255 }), (raw, proto) => {
        const b = Buffer.from(raw);
        if (b.length >= 10) b[9] = proto % 2 ? 17 : 1;
        onlyWireErrors(() => parseUdp(parseIpv4Packet(b)));
        onlyWireErrors(() => parseIcmpEcho(parseIpv4Packet(b)));
      }),
    );
    fc.assert(
      fc.property(
        fc.nat({ max: udp.length }),
        fc.nat({ max: udp.length - 1 }),
        fc.nat({ max: 255 }),
        (cut, at, v) => {
          const b = Buffer.from(udp);
          b[at] = v;
          onlyWireErrors(() => parseUdp(parseIpv4Packet(b.subarray(0, cut))));
          onlyWireErrors(() => parseUdp(parseIpv4Packet(b)));
          const c = Buffer.from(KERNEL_PING_12);
          c[at % c.length] = v;
          onlyWireErrors(() => parseIcmpEcho(parseIpv4Packet(c.subarray(0, cut))));
        },
      ),
    );
  });
});
