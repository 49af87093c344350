/**
 * What wireguard-go checks on a decrypted inner packet (reference §7 step 8): IPv4 with
 * 20 <= total length <= plaintext length, or IPv6 with 40 + payload length <= plaintext length; the
 * packet is cut to its own length (dropping WireGuard's zero padding). Only the header fields needed
 * here are read (no checksums: the receiving stack checks those).
 */
export interface InnerPacket {
  /** The packet without padding: a view. */
  readonly packet: Buffer;
  /** The source address (4 or 16 bytes): a view. */
  readonly source: Buffer;
}

const IPV4_TOTAL_LENGTH = 2;
const IPV4_SRC = 12;
const IPV4_MIN = 20;
const IPV6_PAYLOAD_LENGTH = 4;
const IPV6_SRC = 8;
const IPV6_HEADER = 40;

/** Null when the packet is not a well-formed IPv4/IPv6 packet by those rules. */
export function splitInnerPacket(p: Buffer): InnerPacket | null {
  if (p.length === 0) return null;
  const version = p[0]! >> 4;
  if (version === 4) {
    if (p.length < IPV4_MIN) return null;
    const total = p.readUInt16BE(IPV4_TOTAL_LENGTH);
    if (total < IPV4_MIN || total > p.length) return null;
    return { packet: p.subarray(0, total), source: p.subarray(IPV4_SRC, IPV4_SRC + 4) };
  }
  if (version === 6) {
    if (p.length < IPV6_HEADER) return null;
    const total = p.readUInt16BE(IPV6_PAYLOAD_LENGTH) + IPV6_HEADER;
    if (total > p.length) return null;
    return { packet: p.subarray(0, total), source: p.subarray(IPV6_SRC, IPV6_SRC + 16) };
  }
  return null;
}
