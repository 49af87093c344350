/**
 * UDP (RFC 768) inside IPv4: the datagrams the reliable session rides in.
 *
 *   0      7 8     15 16    23 24    31
 *  +--------+--------+--------+--------+
 *  |   Source Port   |    Dest Port    |  0
 *  |     Length      |    Checksum     |  4
 *  +--------+--------+--------+--------+
 *  |          data octets ...             8
 *
 * Length covers header + data (>= 8). The checksum covers this pseudo-header, then the UDP header
 * and data; a computed 0 is sent as 0xffff, and a received 0 means "no checksum".
 *
 *  | src addr (4) | dst addr (4) | zero (1) | protocol=17 (1) | UDP length (2) |
 */
import { needBytes, TunnelError } from '../../errors.js';
import { finishChecksum, onesSum } from './checksum.js';
import {
  IP_PROTO_UDP,
  IPV4_HEADER_LEN,
  IPV4_MAX_PACKET,
  type Ipv4Fields,
  type Ipv4View,
  rejectFragment,
  writeIpv4Header,
} from './ipv4.js';

export const UDP_SRC_PORT = 0;
export const UDP_DST_PORT = 2;
export const UDP_LENGTH = 4;
export const UDP_CHECKSUM = 6;
export const UDP_HEADER_LEN = 8;
/** IPv4 (20) + UDP (8): bytes in front of the data of every datagram we build. */
export const IPV4_UDP_OVERHEAD = IPV4_HEADER_LEN + UDP_HEADER_LEN;
/** Largest UDP data that fits an inner packet at WireGuard's default MTU 1420: 1392. */
export const UDP_MAX_PAYLOAD_AT_MTU_1420 = 1420 - IPV4_UDP_OVERHEAD;

export interface UdpFields {
  readonly src: number;
  readonly dst: number;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly ttl?: number;
  readonly id?: number;
  /** Compute the UDP checksum (default true); false sends 0, "no checksum". */
  readonly checksum?: boolean;
}

export interface UdpView {
  readonly srcPort: number;
  readonly dstPort: number;
  readonly length: number;
  readonly checksum: number;
  /** The data, a view into the packet. */
  readonly payload: Buffer;
}

function port(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff)
    throw new TunnelError('BAD_INPUT', `${what} must be 0-65535`);
  return v;
}

/** The UDP checksum over the pseudo-header and `udp` (header + data, checksum field as stored). */
export function udpChecksum(src: number, dst: number, udp: Uint8Array): number {
  let sum = (src >>> 16) + (src & 0xffff) + (dst >>> 16) + (dst & 0xffff) + IP_PROTO_UDP + udp.length;
  sum = onesSum(udp, 0, udp.length, sum);
  return finishChecksum(sum);
}

/**
 * Writes the IPv4 and UDP headers in front of `payloadLength` bytes the caller has already placed
 * at `out[offset + 28]` (zero copy), and returns the packet length. With `f.checksum === false`
 * the UDP checksum is sent as 0 ("none", legal in IPv4): WireGuard already authenticates every
 * packet, and the receiving kernel then skips the check.
 */
export function writeUdpHeaders(out: Buffer, offset: number, f: UdpFields, payloadLength: number): number {
  const total = IPV4_UDP_OVERHEAD + payloadLength;
  if (!Number.isInteger(payloadLength) || payloadLength < 0 || total > IPV4_MAX_PACKET) {
    throw new TunnelError(
      'BAD_INPUT',
      `UDP payload of ${payloadLength} bytes is over ${IPV4_MAX_PACKET - 28}`,
    );
  }
  if (!Number.isInteger(offset) || offset < 0 || offset + total > out.length) {
    throw new TunnelError('BAD_INPUT', 'UDP packet does not fit in the output buffer');
  }
  const ipFields: Ipv4Fields = {
    src: f.src,
    dst: f.dst,
    protocol: IP_PROTO_UDP,
    ttl: f.ttl ?? 64,
    id: f.id ?? 0,
  };
  writeIpv4Header(out, offset, ipFields, total);
  const u = offset + IPV4_HEADER_LEN;
  out.writeUInt16BE(port(f.srcPort, 'source port'), u + UDP_SRC_PORT);
  out.writeUInt16BE(port(f.dstPort, 'destination port'), u + UDP_DST_PORT);
  out.writeUInt16BE(UDP_HEADER_LEN + payloadLength, u + UDP_LENGTH);
  out.writeUInt16BE(0, u + UDP_CHECKSUM);
  if (f.checksum !== false) {
    const c = udpChecksum(f.src, f.dst, out.subarray(u, offset + total));
    out.writeUInt16BE(c === 0 ? 0xffff : c, u + UDP_CHECKSUM);
  }
  return total;
}

/**
 * Writes an IPv4+UDP packet carrying a copy of `payload` at `out[offset]` and returns its length.
 * Lets a caller leave headroom (for example the 16-byte WireGuard data header) in front.
 */
export function writeUdpPacket(out: Buffer, offset: number, f: UdpFields, payload: Uint8Array): number {
  const total = IPV4_UDP_OVERHEAD + payload.length;
  if (total > IPV4_MAX_PACKET) {
    throw new TunnelError(
      'BAD_INPUT',
      `UDP payload of ${payload.length} bytes is over ${IPV4_MAX_PACKET - 28}`,
    );
  }
  if (!Number.isInteger(offset) || offset < 0 || offset + total > out.length) {
    throw new TunnelError('BAD_INPUT', 'UDP packet does not fit in the output buffer');
  }
  out.set(payload, offset + IPV4_UDP_OVERHEAD);
  return writeUdpHeaders(out, offset, f, payload.length);
}

export function buildUdpPacket(f: UdpFields, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(IPV4_UDP_OVERHEAD + payload.length);
  writeUdpPacket(out, 0, f, payload);
  return out;
}

/**
 * Parses the UDP datagram in a parsed IPv4 packet. WIRE_BAD_TYPE if the protocol is not 17;
 * WIRE_TRUNCATED if under 8 bytes or Length exceeds the IP payload; WIRE_MALFORMED if Length < 8.
 * Bytes of the IP payload after Length are ignored.
 */
export function parseUdp(ip: Ipv4View): UdpView {
  if (ip.protocol !== IP_PROTO_UDP) {
    throw new TunnelError('WIRE_BAD_TYPE', `IP protocol ${ip.protocol}, expected UDP (17)`);
  }
  rejectFragment(ip);
  const b = ip.payload;
  needBytes(b, UDP_HEADER_LEN, 'UDP header');
  const length = b.readUInt16BE(UDP_LENGTH);
  if (length < UDP_HEADER_LEN) throw new TunnelError('WIRE_MALFORMED', `UDP length ${length} is below 8`);
  needBytes(b, length, 'UDP datagram (length field)');
  return {
    srcPort: b.readUInt16BE(UDP_SRC_PORT),
    dstPort: b.readUInt16BE(UDP_DST_PORT),
    length,
    checksum: b.readUInt16BE(UDP_CHECKSUM),
    payload: b.subarray(UDP_HEADER_LEN, length),
  };
}

/** True if the checksum is absent (0) or correct. */
export function udpChecksumOk(ip: Ipv4View, udp: UdpView): boolean {
  if (udp.checksum === 0) return true;
  return udpChecksum(ip.src, ip.dst, ip.payload.subarray(0, udp.length)) === 0;
}
