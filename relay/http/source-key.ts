/**
 * The source a connection is counted under for the per-source cap: an IPv4 address as it is (IPv4-mapped IPv6
 * addresses too), an IPv6 address by its /64 (one host usually holds a whole /64, so counting single IPv6
 * addresses would not cap anyone).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** `a.b.c.d`, or the first four groups of an IPv6 address as `x:x:x:x::/64`; null for anything else. */
export function sourceKey(address: string | undefined): string | null {
  if (address === undefined) return null;
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return null;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  const groups = expandIPv6(address.split('%', 1)[0]!);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, lower-case hex without leading zeros. */
function expandIPv6(address: string): string[] {
  let text = address.toLowerCase();
  // A trailing dotted IPv4 part stands for the last two groups.
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const front = head ? head.split(':') : [];
  const back = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...zeros, ...back].map((g) => Number.parseInt(g, 16).toString(16));
}
