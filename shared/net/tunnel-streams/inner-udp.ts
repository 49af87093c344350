/**
 * Inner UDP datagrams of the stream session: pick the ARQ datagram out of a decrypted inner IP packet,
 * and wrap an ARQ datagram into one. No I/O.
 */
import { isTunnelError } from '../../errors.js';
import { growPacket, type PacketRoom } from '../buffers/packet-room.js';
import { IPV4_MAX_PACKET, parseIpv4Packet } from '../ip/ipv4.js';
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

/**
 * What the stream session's ARQ may send to a peer, given what the layers below the inner packet allow
 * (`below`: the tunnel endpoint's WireGuard and path): the inner IPv4/UDP header takes 28 bytes of the
 * MTU, and is written in place in front of each datagram together with the headers below it.
 */
export function streamDatagramRoom(below: PacketRoom): PacketRoom {
  return {
    mtu: below.mtu - IPV4_UDP_OVERHEAD,
    headroom: below.headroom + IPV4_UDP_OVERHEAD,
    tailroom: below.tailroom,
  };
}

/**
 * The inner packet carrying `datagram` from `src` to `dst` (UDP checksum 0: WireGuard authenticates): the
 * IPv4/UDP headers written in place in front of `datagram` when it was granted IPV4_UDP_OVERHEAD bytes of
 * headroom (the result is then a view handing the rest of the room down), else a new buffer with a copy.
 */
export function wrapStreamDatagram(
  src: number,
  dst: number,
  datagram: Uint8Array,
  port = STREAMS_PORT,
): Buffer {
  const len = datagram.length;
  let out = len + IPV4_UDP_OVERHEAD <= IPV4_MAX_PACKET ? growPacket(datagram, IPV4_UDP_OVERHEAD, 0) : null;
  if (!out) {
    out = Buffer.allocUnsafe(IPV4_UDP_OVERHEAD + len);
    out.set(datagram, IPV4_UDP_OVERHEAD);
  }
  writeUdpHeaders(out, 0, { src, dst, srcPort: port, dstPort: port, checksum: false }, len);
  return out;
}
