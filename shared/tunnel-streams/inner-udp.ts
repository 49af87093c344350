/**
 * Inner UDP datagrams of the stream session: pick the ARQ datagram out of a decrypted inner IP packet,
 * and wrap an ARQ datagram into one. No I/O.
 */
import { isTunnelError } from '../errors.js';
import { parseIpv4Packet } from '../ip/ipv4.js';
import { IPV4_UDP_OVERHEAD, parseUdp, writeUdpHeaders } from '../ip/udp.js';
import { STREAMS_PORT } from './constants.js';

export type InnerDropReason = 'not-ipv4-udp' | 'wrong-port' | 'wrong-address' | 'malformed';

export interface InnerDatagram {
  /** Source tunnel address (u32). */
  readonly src: number;
  /** The UDP data, a view into the packet. */
  readonly payload: Buffer;
}

/**
 * The UDP payload of `packet` if it is IPv4/UDP from STREAMS_PORT to `port` addressed to `local`;
 * otherwise the reason it is not. Never throws.
 */
export function pickStreamDatagram(
  packet: Buffer,
  local: number,
  port = STREAMS_PORT,
): InnerDatagram | InnerDropReason {
  try {
    const ip = parseIpv4Packet(packet);
    if (ip.protocol !== 17) return 'not-ipv4-udp';
    if (ip.dst !== local) return 'wrong-address';
    const udp = parseUdp(ip);
    if (udp.dstPort !== port || udp.srcPort !== port) return 'wrong-port';
    return { src: ip.src, payload: udp.payload };
  } catch (err) {
    if (isTunnelError(err)) return err.code === 'WIRE_BAD_TYPE' ? 'not-ipv4-udp' : 'malformed';
    return 'malformed';
  }
}

/** A new inner packet carrying a copy of `datagram` from `src` to `dst` (UDP checksum 0: WireGuard authenticates). */
export function wrapStreamDatagram(
  src: number,
  dst: number,
  datagram: Uint8Array,
  port = STREAMS_PORT,
): Buffer {
  const out = Buffer.allocUnsafe(IPV4_UDP_OVERHEAD + datagram.length);
  out.set(datagram, IPV4_UDP_OVERHEAD);
  writeUdpHeaders(out, 0, { src, dst, srcPort: port, dstPort: port, checksum: false }, datagram.length);
  return out;
}
