/**
 * The MTU of the interface a UDP datagram to an address leaves by (Linux): the ceiling of the direct path's
 * MTU search (pmtu-search.ts). Node's dgram cannot set don't-fragment (IP_PMTUDISC_DO), so a datagram
 * larger than its interface's MTU would be fragmented by the kernel and "carried"; probes never exceed this
 * MTU instead. The route comes from /proc/net/route (the main IPv4 table of the process's network namespace),
 * the MTU from /sys/class/net/<interface>/mtu; an address of this host (127.0.0.0/8, or an interface's own)
 * leaves by `lo`. IPv6, other route tables, or anything unreadable: undefined (the path stays at its base).
 */
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface FirstHopSources {
  /** /proc/net/route's text. */
  routes(): string;
  /** The MTU of an interface, or undefined. */
  interfaceMtu(name: string): number | undefined;
  /** This host's own IPv4 addresses. */
  localAddresses(): readonly string[];
}

/** Dotted IPv4 to a u32 (host order), or undefined. */
function ipv4ToU32(host: string): number | undefined {
  const plain = host.startsWith('::ffff:') ? host.slice(7) : host;
  if (!isIPv4(plain)) return undefined;
  return plain.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** /proc/net/route's little-endian hex address to a u32 (host order), or undefined. */
function procHex(hex: string | undefined): number | undefined {
  if (!hex || !/^[0-9A-Fa-f]{8}$/.test(hex)) return undefined;
  const le = Number.parseInt(hex, 16);
  return (
    ((le & 0xff) * 0x1000000 + ((le >>> 8) & 0xff) * 0x10000 + ((le >>> 16) & 0xff) * 0x100 + (le >>> 24)) >>>
    0
  );
}

function prefixLength(mask: number): number {
  let n = 0;
  for (let m = mask >>> 0; m & 0x80000000; m = (m << 1) >>> 0) n++;
  return n;
}

/**
 * The interface /proc/net/route sends `address` (u32) by: the up route with the longest prefix, then the
 * lowest metric. Never throws; undefined when no route matches or the text is not a route table.
 */
export function routeInterface(table: string, address: number): string | undefined {
  let best: { iface: string; prefix: number; metric: number } | undefined;
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    const dest = procHex(f[1]);
    const mask = procHex(f[7]);
    const flags = Number.parseInt(f[3] ?? '', 16);
    const metric = Number(f[6]);
    if (!f[0] || dest === undefined || mask === undefined || !(flags & 1) || !Number.isFinite(metric))
      continue;
    if ((address & mask) >>> 0 !== (dest & mask) >>> 0) continue;
    const prefix = prefixLength(mask);
    if (!best || prefix > best.prefix || (prefix === best.prefix && metric < best.metric))
      best = { iface: f[0], prefix, metric };
  }
  return best?.iface;
}

export const linuxFirstHopSources: FirstHopSources = {
  routes: () => readFileSync('/proc/net/route', 'latin1'),
  interfaceMtu(name) {
    if (!/^[\w.@-]{1,15}$/.test(name)) return undefined;
    const mtu = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'latin1').trim());
    return Number.isInteger(mtu) && mtu > 0 ? mtu : undefined;
  },
  localAddresses: () =>
    Object.values(networkInterfaces())
      .flat()
      .flatMap((a) => (a && a.family === 'IPv4' ? [a.address] : [])),
};

/** The MTU of the interface datagrams to `host` leave by (see the top of this file). Never throws. */
export function firstHopMtu(
  host: string,
  sources: FirstHopSources = linuxFirstHopSources,
): number | undefined {
  try {
    const address = ipv4ToU32(host);
    if (address === undefined) return undefined;
    const local = address >>> 24 === 127 || sources.localAddresses().some((a) => ipv4ToU32(a) === address);
    const iface = local ? 'lo' : routeInterface(sources.routes(), address);
    return iface === undefined ? undefined : sources.interfaceMtu(iface);
  } catch {
    return undefined;
  }
}
