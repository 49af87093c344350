/**
 * IPv4 headers (RFC 791), without options on build; options are skipped on parse.
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |Version|  IHL  |    DSCP/ECN   |          Total Length         |  0
 *  |         Identification        |Flags|     Fragment Offset     |  4
 *  |  Time to Live |    Protocol   |        Header Checksum        |  8
 *  |                       Source Address                          | 12
 *  |                    Destination Address                        | 16
 *  |                    Options (IHL > 5) ...                      | 20
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * All fields big-endian. IHL counts 32-bit words (5..15). Total Length covers header + payload;
 * bytes after it in the buffer (WireGuard's zero padding) are not part of the packet.
 */
import { needBytes, TunnelError } from '../../errors.js';
import { internetChecksum } from './checksum.js';

export const IPV4_VERSION_IHL = 0;
export const IPV4_TOS = 1;
export const IPV4_TOTAL_LENGTH = 2;
export const IPV4_ID = 4;
export const IPV4_FLAGS_FRAG = 6;
export const IPV4_TTL = 8;
export const IPV4_PROTOCOL = 9;
export const IPV4_CHECKSUM = 10;
export const IPV4_SRC = 12;
export const IPV4_DST = 16;
export const IPV4_HEADER_LEN = 20;
/** Total Length is 16 bits. */
export const IPV4_MAX_PACKET = 0xffff;
export const IPV4_FLAG_DF = 0x4000;
export const IPV4_FLAG_MF = 0x2000;

/** IPv6 fixed header: version in the top nibble of byte 0, Payload Length at 4..5, 40 bytes. */
export const IPV6_HEADER_LEN = 40;
export const IPV6_PAYLOAD_LENGTH = 4;

export const IP_PROTO_ICMP = 1;
export const IP_PROTO_TCP = 6;
export const IP_PROTO_UDP = 17;

export interface Ipv4Fields {
  readonly src: number;
  readonly dst: number;
  readonly protocol: number;
  /** Default 64. */
  readonly ttl?: number;
  /** Default 0. */
  readonly id?: number;
  /** Default true (we never fragment). */
  readonly dontFragment?: boolean;
  /** Default 0. */
  readonly tos?: number;
}

export interface Ipv4View extends Required<Ipv4Fields> {
  readonly headerLength: number;
  readonly totalLength: number;
  readonly moreFragments: boolean;
  readonly fragmentOffset: number;
  readonly checksum: number;
  /** The packet, `buf[0, totalLength)`, a view (no copy); padding excluded. */
  readonly packet: Buffer;
  /** The payload after the header, a view. */
  readonly payload: Buffer;
}

function u8(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xff) throw new TunnelError('BAD_INPUT', `${what} must be 0-255`);
  return v;
}

function u16(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff)
    throw new TunnelError('BAD_INPUT', `${what} must be 0-65535`);
  return v;
}

function u32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff_ffff) {
    throw new TunnelError('BAD_INPUT', `${what} must be a u32 IPv4 address`);
  }
  return v;
}

/**
 * Writes a 20-byte header at `out[offset]` for a packet of `totalLength` bytes and fills in its
 * checksum. Returns IPV4_HEADER_LEN.
 */
export function writeIpv4Header(out: Buffer, offset: number, f: Ipv4Fields, totalLength: number): number {
  if (totalLength < IPV4_HEADER_LEN || totalLength > IPV4_MAX_PACKET) {
    throw new TunnelError('BAD_INPUT', `IPv4 total length ${totalLength} is outside 20-${IPV4_MAX_PACKET}`);
  }
  if (offset < 0 || offset + IPV4_HEADER_LEN > out.length) {
    throw new TunnelError('BAD_INPUT', 'IPv4 header does not fit in the output buffer');
  }
  out[offset + IPV4_VERSION_IHL] = 0x45;
  out[offset + IPV4_TOS] = u8(f.tos ?? 0, 'tos');
  out.writeUInt16BE(totalLength, offset + IPV4_TOTAL_LENGTH);
  out.writeUInt16BE(u16(f.id ?? 0, 'id'), offset + IPV4_ID);
  out.writeUInt16BE((f.dontFragment ?? true) ? IPV4_FLAG_DF : 0, offset + IPV4_FLAGS_FRAG);
  out[offset + IPV4_TTL] = u8(f.ttl ?? 64, 'ttl');
  out[offset + IPV4_PROTOCOL] = u8(f.protocol, 'protocol');
  out.writeUInt16BE(0, offset + IPV4_CHECKSUM);
  out.writeUInt32BE(u32(f.src, 'src'), offset + IPV4_SRC);
  out.writeUInt32BE(u32(f.dst, 'dst'), offset + IPV4_DST);
  out.writeUInt16BE(internetChecksum(out, offset, offset + IPV4_HEADER_LEN), offset + IPV4_CHECKSUM);
  return IPV4_HEADER_LEN;
}

/** A complete IPv4 packet: header + a copy of `payload`. */
export function buildIpv4Packet(f: Ipv4Fields, payload: Uint8Array): Buffer {
  const total = IPV4_HEADER_LEN + payload.length;
  if (total > IPV4_MAX_PACKET) {
    throw new TunnelError(
      'BAD_INPUT',
      `IPv4 payload of ${payload.length} bytes is over ${IPV4_MAX_PACKET - 20}`,
    );
  }
  const out = Buffer.allocUnsafe(total);
  writeIpv4Header(out, 0, f, total);
  out.set(payload, IPV4_HEADER_LEN);
  return out;
}

/**
 * Parses and validates an IPv4 packet at the start of `buf` (trailing padding allowed).
 * WIRE_TRUNCATED: under 20 bytes, or Total Length over the buffer. WIRE_BAD_TYPE: version not 4.
 * WIRE_MALFORMED: IHL < 5, or Total Length below the header length.
 * The checksum is read, not verified: see ipv4HeaderChecksumOk.
 */
export function parseIpv4Packet(buf: Buffer): Ipv4View {
  needBytes(buf, IPV4_HEADER_LEN, 'IPv4 header');
  const b0 = buf[IPV4_VERSION_IHL]!;
  if (b0 >> 4 !== 4) throw new TunnelError('WIRE_BAD_TYPE', `IP version ${b0 >> 4}, expected 4`);
  const headerLength = (b0 & 0x0f) * 4;
  if (headerLength < IPV4_HEADER_LEN) {
    throw new TunnelError('WIRE_MALFORMED', `IPv4 IHL ${b0 & 0x0f} is below 5`);
  }
  const totalLength = buf.readUInt16BE(IPV4_TOTAL_LENGTH);
  if (totalLength < headerLength) {
    throw new TunnelError(
      'WIRE_MALFORMED',
      `IPv4 total length ${totalLength} is below header length ${headerLength}`,
    );
  }
  needBytes(buf, totalLength, 'IPv4 packet (total length)');
  const ff = buf.readUInt16BE(IPV4_FLAGS_FRAG);
  const packet = buf.subarray(0, totalLength);
  return {
    tos: buf[IPV4_TOS]!,
    totalLength,
    headerLength,
    id: buf.readUInt16BE(IPV4_ID),
    dontFragment: (ff & IPV4_FLAG_DF) !== 0,
    moreFragments: (ff & IPV4_FLAG_MF) !== 0,
    fragmentOffset: (ff & 0x1fff) * 8,
    ttl: buf[IPV4_TTL]!,
    protocol: buf[IPV4_PROTOCOL]!,
    checksum: buf.readUInt16BE(IPV4_CHECKSUM),
    src: buf.readUInt32BE(IPV4_SRC),
    dst: buf.readUInt32BE(IPV4_DST),
    packet,
    payload: packet.subarray(headerLength),
  };
}

/**
 * Throws WIRE_MALFORMED for a fragment (MF set or a non-zero offset): we never fragment inner
 * packets and do not reassemble, so a fragment's payload is not a whole UDP/ICMP message.
 */
export function rejectFragment(v: Ipv4View): void {
  if (v.moreFragments || v.fragmentOffset !== 0) {
    throw new TunnelError('WIRE_MALFORMED', `IPv4 fragment (offset ${v.fragmentOffset}) is not supported`);
  }
}

export function ipv4HeaderChecksumOk(v: Ipv4View): boolean {
  return internetChecksum(v.packet, 0, v.headerLength) === 0;
}

/**
 * Length of the IPv4 or IPv6 packet at the start of `buf`, read from its length field, for
 * stripping WireGuard's zero padding. Same validation as parseIpv4Packet (version 4 or 6 only).
 */
export function ipPacketLength(buf: Buffer): number {
  needBytes(buf, 1, 'IP packet');
  const version = buf[0]! >> 4;
  if (version === 4) return parseIpv4Packet(buf).totalLength;
  if (version === 6) {
    needBytes(buf, IPV6_HEADER_LEN, 'IPv6 header');
    const total = IPV6_HEADER_LEN + buf.readUInt16BE(IPV6_PAYLOAD_LENGTH);
    needBytes(buf, total, 'IPv6 packet (payload length)');
    return total;
  }
  throw new TunnelError('WIRE_BAD_TYPE', `IP version ${version}, expected 4 or 6`);
}
