/**
 * IP addresses as the 16 bytes disco messages carry (IPv4 as IPv4-mapped IPv6, ::ffff:a.b.c.d) and back to
 * text: dotted IPv4 for mapped addresses, RFC 5952 IPv6 otherwise (lowercase, longest zero run as `::`).
 * ipToFamilyBytes gives the 4-or-16-byte form a STUN MAPPED-ADDRESS carries, from the same parser.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const IP_BYTES_LEN = 16;
const V4_MAPPED_PREFIX = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);

function v4Bytes(text: string): number[] {
  return text.split('.').map((part) => Number(part));
}

/** Eight 16-bit groups of an IPv6 address Node accepted (isIPv6): a dotted tail as two groups, `::` expanded. */
function v6Groups(text: string): number[] {
  const lastColon = text.lastIndexOf(':');
  let hexText = text;
  if (text.includes('.', lastColon)) {
    const [a = 0, b = 0, c = 0, d = 0] = v4Bytes(text.slice(lastColon + 1));
    hexText = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = hexText.split('::');
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const l = parse(left);
  if (right === undefined) return l;
  const r = parse(right);
  return [...l, ...Array<number>(Math.max(0, 8 - l.length - r.length)).fill(0), ...r];
}

/** The 16-byte form of an IPv4 or IPv6 address in text, or null when it is neither (zone ids included). */
export function ipToBytes(text: string): Buffer | null {
  if (isIPv4(text)) return Buffer.concat([V4_MAPPED_PREFIX, Buffer.from(v4Bytes(text))]);
  if (!isIPv6(text) || text.includes('%')) return null;
  const groups = v6Groups(text);
  if (groups.length !== 8) return null;
  const out = Buffer.alloc(IP_BYTES_LEN);
  groups.forEach((g, i) => {
    out.writeUInt16BE(g, i * 2);
  });
  return out;
}

export function isV4Mapped(bytes: Uint8Array): boolean {
  return bytes.length === IP_BYTES_LEN && V4_MAPPED_PREFIX.equals(bytes.subarray(0, 12));
}

/**
 * `text` as its family's bytes: 4 for IPv4 and IPv4-mapped IPv6 (an IPv4 sender seen on a dual-stack socket),
 * 16 for other IPv6. A zone id (`fe80::1%eth0`) is dropped, as a socket's sender address may carry one; null
 * for anything that is not an address.
 */
export function ipToFamilyBytes(text: string): Buffer | null {
  const bytes = ipToBytes(text.replace(/%.*$/, ''));
  if (!bytes) return null;
  return isV4Mapped(bytes) ? bytes.subarray(12) : bytes;
}

/**
 * The address bytes a socket of `family` puts in its sockaddr: 16 on an IPv6 socket (IPv4 as ::ffff:a.b.c.d),
 * 4 on an IPv4 one; null for anything else (not an address, or IPv6 on an IPv4 socket).
 */
export function ipToSocketBytes(text: string, family: 4 | 6): Buffer | null {
  const bytes = ipToBytes(text);
  if (bytes === null || family === 6) return bytes;
  return isV4Mapped(bytes) ? bytes.subarray(12) : null;
}

/** Text of a 16-byte address: dotted for IPv4-mapped, RFC 5952 otherwise. */
export function bytesToIp(bytes: Uint8Array): string {
  if (bytes.length !== IP_BYTES_LEN) throw new RangeError(`ip: ${bytes.length} bytes, not 16`);
  if (isV4Mapped(bytes)) return [...bytes.subarray(12)].join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

/** `host` in the one text form bytesToIp gives (so `::ffff:10.0.0.1` and `10.0.0.1` are one), or null. */
export function normalizeIp(host: string): string | null {
  const b = ipToBytes(host);
  return b ? bytesToIp(b) : null;
}
