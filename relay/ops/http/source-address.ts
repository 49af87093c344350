/**
 * The source a request is counted under for per-source limits. It is the TCP peer address of the
 * connection (the relay does not read X-Forwarded-For, so a client cannot name another source), or the client a
 * trusted load balancer named in a PROXY header (`serve --proxy-protocol`, relay/ops/proxy-protocol/), or on a
 * request another replica of the fleet forwarded with the mesh key, the client address that replica names
 * (relay/fleet/mesh/mesh-source.ts). IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, what a dual-stack listener sees)
 * count as the IPv4 address; other IPv6 addresses count by their /64, since one host is routinely
 * given a whole /64 and could otherwise step to a fresh address per attempt.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { TunnelError } from '../../../shared/errors.js';
import { shown } from '../../../shared/kit/cli/parsers.js';
import { proxiedClient, type SocketEndpoints } from '../proxy-protocol/proxied-sources.js';

/** Key for a socket without an address (already closed), or text that is no address: all share one budget. */
export const UNKNOWN_SOURCE = 'unknown';

const IPV6_GROUPS = 8;

/**
 * The address a connection's client is known by: the one a trusted balancer named in its PROXY header, else the
 * TCP peer address (undefined once the socket is gone).
 */
export function peerAddress(socket: SocketEndpoints & object): string | undefined {
  return proxiedClient(socket)?.address ?? socket.remoteAddress;
}

/**
 * Maps a peer address to its limit key: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 as `<prefix>::/64`,
 * anything else (undefined, not an address) as UNKNOWN_SOURCE.
 */
export function sourceKey(address: string | undefined): string {
  if (address === undefined) return UNKNOWN_SOURCE;
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
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

/**
 * Reads an operator's `--source` value: an IPv4 or IPv6 address, or an IPv6 `/64` prefix as `rate-limit list`
 * prints it. Returns the limit key; BAD_INPUT naming the value otherwise.
 */
export function parseSource(text: string, what = 'source'): string {
  const bare = text.endsWith('/64') ? text.slice(0, -3) : text;
  if (text.length <= 64 && (isIPv4(text) || (isIPv6(bare) && !bare.includes('%')))) return sourceKey(bare);
  throw new TunnelError(
    'BAD_INPUT',
    `${what} ${shown(text)} is not an IP address: expected IPv4 (192.0.2.7), IPv6 (2001:db8::7) or an IPv6 /64 (2001:db8:0:1::/64)`,
  );
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
