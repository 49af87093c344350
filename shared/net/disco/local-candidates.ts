/**
 * The local candidates of a UDP socket: the machine's non-internal interface addresses with the socket's
 * port, those a socket bound to `bindAddress` can be reached at (all IPv4 ones for 0.0.0.0, IPv4 and IPv6
 * for ::, only itself for a specific address). Link-local addresses (169.254/16, fe80::/10) are left out:
 * they need an interface scope no peer can use. Pure: the interface list is passed in.
 */
import type { NetworkInterfaceInfo } from 'node:os';
import { ipToBytes, normalizeIp } from '../ip/ip-bytes.js';
import type { DiscoAddress } from './disco-codec.js';

export type InterfaceList = NodeJS.Dict<NetworkInterfaceInfo[]>;

function linkLocal(host: string): boolean {
  const b = ipToBytes(host);
  if (!b) return true;
  if (host.includes('.') && !host.includes(':')) return b[12] === 169 && b[13] === 254;
  return b[0] === 0xfe && ((b[1] ?? 0) & 0xc0) === 0x80;
}

/** The candidates, in interface order, without duplicates. */
export function localCandidates(
  interfaces: InterfaceList,
  bindAddress: string,
  port: number,
): DiscoAddress[] {
  const bound = normalizeIp(bindAddress);
  const any4 = bound === '0.0.0.0';
  const any6 = bound === '::';
  const out: DiscoAddress[] = [];
  const seen = new Set<string>();
  for (const list of Object.values(interfaces)) {
    for (const info of list ?? []) {
      if (info.internal || linkLocal(info.address)) continue;
      const host = normalizeIp(info.address);
      if (!host || seen.has(host)) continue;
      const v4 = info.family === 'IPv4';
      if (!(any6 || (any4 && v4) || host === bound)) continue;
      seen.add(host);
      out.push({ host, port });
    }
  }
  return out;
}

/** A text that changes whenever the candidate-relevant interface addresses do (to notice network changes). */
export function interfaceSignature(interfaces: InterfaceList): string {
  const all: string[] = [];
  for (const list of Object.values(interfaces))
    for (const info of list ?? []) if (!info.internal) all.push(info.address);
  return all.sort().join(',');
}
