/**
 * ICMP echo request / reply (RFC 792) inside IPv4: what `ping` sends through a tunnel.
 *
 *   0      7 8     15 16            31
 *  +--------+--------+----------------+
 *  |  Type  |  Code  |    Checksum    |  0   type 8 = echo request, 0 = echo reply; code 0
 *  |   Identifier    |    Sequence    |  4
 *  +--------+--------+----------------+
 *  |   data ...                          8
 *
 * The checksum covers the ICMP message (header + data), no pseudo-header.
 */
import { needBytes, TunnelError } from '../../errors.js';
import { internetChecksum } from './checksum.js';
import {
  IP_PROTO_ICMP,
  IPV4_HEADER_LEN,
  IPV4_MAX_PACKET,
  type Ipv4View,
  rejectFragment,
  writeIpv4Header,
} from './ipv4.js';

export const ICMP_TYPE = 0;
export const ICMP_CODE = 1;
export const ICMP_CHECKSUM = 2;
export const ICMP_ECHO_ID = 4;
export const ICMP_ECHO_SEQ = 6;
export const ICMP_ECHO_HEADER_LEN = 8;
export const ICMP_ECHO_REPLY = 0;
export const ICMP_ECHO_REQUEST = 8;

export interface IcmpEchoFields {
  readonly src: number;
  readonly dst: number;
  /** ICMP_ECHO_REQUEST or ICMP_ECHO_REPLY. */
  readonly type: typeof ICMP_ECHO_REQUEST | typeof ICMP_ECHO_REPLY;
  readonly identifier: number;
  readonly sequence: number;
  readonly ttl?: number;
  readonly id?: number;
}

export interface IcmpEchoView {
  readonly type: number;
  readonly code: number;
  readonly checksum: number;
  readonly identifier: number;
  readonly sequence: number;
  readonly data: Buffer;
  /** The checksum over the message verifies. */
  readonly checksumOk: boolean;
}

function u16(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff)
    throw new TunnelError('BAD_INPUT', `${what} must be 0-65535`);
  return v;
}

/** A complete IPv4 packet with an ICMP echo request or reply carrying `data`. */
export function buildIcmpEchoPacket(f: IcmpEchoFields, data: Uint8Array): Buffer {
  if (f.type !== ICMP_ECHO_REQUEST && f.type !== ICMP_ECHO_REPLY) {
    throw new TunnelError('BAD_INPUT', `ICMP echo type must be 0 or 8, got ${String(f.type)}`);
  }
  const total = IPV4_HEADER_LEN + ICMP_ECHO_HEADER_LEN + data.length;
  if (total > IPV4_MAX_PACKET)
    throw new TunnelError('BAD_INPUT', `ICMP data of ${data.length} bytes is too large`);
  const out = Buffer.allocUnsafe(total);
  writeIpv4Header(
    out,
    0,
    { src: f.src, dst: f.dst, protocol: IP_PROTO_ICMP, ttl: f.ttl ?? 64, id: f.id ?? 0 },
    total,
  );
  const o = IPV4_HEADER_LEN;
  out[o + ICMP_TYPE] = f.type;
  out[o + ICMP_CODE] = 0;
  out.writeUInt16BE(0, o + ICMP_CHECKSUM);
  out.writeUInt16BE(u16(f.identifier, 'identifier'), o + ICMP_ECHO_ID);
  out.writeUInt16BE(u16(f.sequence, 'sequence'), o + ICMP_ECHO_SEQ);
  out.set(data, o + ICMP_ECHO_HEADER_LEN);
  out.writeUInt16BE(internetChecksum(out, o, total), o + ICMP_CHECKSUM);
  return out;
}

/**
 * Parses an ICMP echo request or reply from a parsed IPv4 packet. WIRE_BAD_TYPE for another IP
 * protocol or ICMP type; WIRE_TRUNCATED under 8 bytes. The checksum is reported, not enforced.
 */
export function parseIcmpEcho(ip: Ipv4View): IcmpEchoView {
  if (ip.protocol !== IP_PROTO_ICMP) {
    throw new TunnelError('WIRE_BAD_TYPE', `IP protocol ${ip.protocol}, expected ICMP (1)`);
  }
  rejectFragment(ip);
  const b = ip.payload;
  needBytes(b, ICMP_ECHO_HEADER_LEN, 'ICMP echo header');
  const type = b[ICMP_TYPE]!;
  if (type !== ICMP_ECHO_REQUEST && type !== ICMP_ECHO_REPLY) {
    throw new TunnelError('WIRE_BAD_TYPE', `ICMP type ${type} is not an echo request (8) or reply (0)`);
  }
  return {
    type,
    code: b[ICMP_CODE]!,
    checksum: b.readUInt16BE(ICMP_CHECKSUM),
    identifier: b.readUInt16BE(ICMP_ECHO_ID),
    sequence: b.readUInt16BE(ICMP_ECHO_SEQ),
    data: b.subarray(ICMP_ECHO_HEADER_LEN),
    checksumOk: internetChecksum(b) === 0,
  };
}

/** The echo reply a host would send for an echo request packet (addresses swapped, same id/seq/data). */
export function buildEchoReplyFor(request: Ipv4View, ttl = 64): Buffer {
  const e = parseIcmpEcho(request);
  if (e.type !== ICMP_ECHO_REQUEST) throw new TunnelError('BAD_INPUT', 'packet is not an ICMP echo request');
  return buildIcmpEchoPacket(
    {
      src: request.dst,
      dst: request.src,
      type: ICMP_ECHO_REPLY,
      identifier: e.identifier,
      sequence: e.sequence,
      ttl,
    },
    e.data,
  );
}
