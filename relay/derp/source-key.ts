/**
 * The key a connection's pending-handshake slots are counted under: the IPv4 address, or the /64 prefix of an
 * IPv6 address (one host commonly holds a whole /64, so counting single IPv6 addresses would cap nothing).
 * IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, what a dual-stack listener reports) count as their IPv4.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Key for a socket without an address (already closed): all such sockets share one budget. */
export const UNKNOWN_SOURCE = 'unknown';

const IPV6_GROUPS = 8;

/** `remoteAddress` of a socket -> `192.0.2.1` or `2001:db8:0:1::/64`. */
export function sourceKeyOf(remoteAddress: string | undefined): string {
  if (remoteAddress === undefined) return UNKNOWN_SOURCE;
  if (isIPv4(remoteAddress)) return remoteAddress;
  const groups = ipv6Groups(remoteAddress);
  if (groups === null) return UNKNOWN_SOURCE;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address in text form (zone index allowed), or null when it is not one. */
export function ipv6Groups(text: string): number[] | null {
  const address = text.split('%', 1)[0] ?? '';
  if (!isIPv6(address)) return null;
  const halves = address.split('::');
  const head = parseGroups(halves[0] ?? '');
  const tail = parseGroups(halves[1] ?? '');
  if (halves.length === 1) return head;
  const fill = IPV6_GROUPS - head.length - tail.length;
  return [...head, ...new Array<number>(fill).fill(0), ...tail];
}

/** `a:b:c` or `a:b:1.2.3.4` (isIPv6 already checked the syntax) -> 16-bit groups. */
function parseGroups(part: string): number[] {
  if (part === '') return [];
  const groups: number[] = [];
  for (const piece of part.split(':')) {
    if (isIPv4(piece)) {
      const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
      groups.push((a << 8) | b, (c << 8) | d);
    } else {
      groups.push(Number.parseInt(piece, 16));
    }
  }
  return groups;
}
