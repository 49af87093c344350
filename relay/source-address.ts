/**
 * The source a request is counted under for per-source limits. It is the TCP peer address of the
 * connection (the relay does not read X-Forwarded-For or any other header, so a client cannot name
 * another source). IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, what a dual-stack listener sees)
 * count as the IPv4 address; other IPv6 addresses count by their /64, since one host is routinely
 * given a whole /64 and could otherwise step to a fresh address per attempt.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { shown } from '../shared/cli/parsers.js';
import { TunnelError } from '../shared/errors.js';

/** The 8 groups of an IPv6 address (valid per isIPv6), as numbers. */
function ipv6Groups(addr: string): number[] {
  let text = addr.split('%')[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (s: string | undefined): number[] =>
    s ? s.split(':').map((g) => Number.parseInt(g, 16)) : [];
  const left = parse(head);
  const right = parse(tail);
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<number>(zeros).fill(0), ...right];
}

/** Maps a peer address to its limit key: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 as `<prefix>::/64`. */
export function sourceKey(address: string): string {
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return address;
  const g = ipv6Groups(address);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff].join('.');
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
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
