/**
 * Which candidate addresses a node may send disco pings to. A peer's call-me-maybe is only its claim: sent to
 * blindly, it would turn our UDP port into a reflector aimed wherever the peer likes. Never probed:
 *
 *   scope         IPv4                                   IPv6
 *   unspecified   0.0.0.0/8                              ::
 *   loopback      127.0.0.0/8                            ::1
 *   link-local    169.254.0.0/16                         fe80::/10
 *   multicast     224.0.0.0/4                            ff00::/8
 *   broadcast     255.255.255.255
 *   reserved      240.0.0.0/4 (but the broadcast)        ::/96 (IPv4-compatible), fec0::/10 (site-local)
 *   own-address   the node's own addresses (its UDP listen address, its public endpoint, its candidates)
 *
 * IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms are judged by the IPv4 address they carry.
 * Private ranges stay allowed (agents on one LAN reach each other there): 10/8, 172.16/12, 192.168/16,
 * 100.64/10 (shared address space) and fc00::/7 (unique local), as does everything else (`global`).
 *
 * An address a datagram was observed from (an authenticated ping over UDP: the kernel delivered it from there)
 * is judged the same way with two differences: loopback is allowed (the kernel delivers a loopback source only
 * from this host, so the peer does run here), and only the own endpoint itself (host and port), not the whole
 * own host, is refused (another program on this host may be the peer).
 */
import { ipToBytes, isV4Mapped, normalizeIp } from '../ip/ip-bytes.js';
import type { DiscoAddress } from './disco-codec.js';

/** Scopes never probed (the refusal reason is the scope's name). */
const REFUSED_SCOPES = [
  'unspecified',
  'loopback',
  'link-local',
  'multicast',
  'broadcast',
  'reserved',
] as const;
type RefusedScope = (typeof REFUSED_SCOPES)[number];

export type AddressScope = RefusedScope | 'private' | 'shared' | 'unique-local' | 'global';

/** Why a candidate address is not probed, one counter each. */
export const CANDIDATE_REFUSALS = [
  'bad-address', // not an IP literal, or a port outside 1..65535
  ...REFUSED_SCOPES,
  'own-address', // one of the node's own addresses
] as const;
export type CandidateRefusal = (typeof CANDIDATE_REFUSALS)[number];

function isRefusedScope(scope: AddressScope): scope is RefusedScope {
  return REFUSED_SCOPES.some((s) => s === scope);
}

const NAT64_PREFIX = Buffer.from([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]);

function ipv4Scope(a: number, b: number, c: number, d: number): AddressScope {
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a === 255 && b === 255 && c === 255 && d === 255) return 'broadcast';
  if (a >= 240) return 'reserved';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b >= 64 && b <= 127) return 'shared';
  return 'global';
}

function ipv6Scope(bytes: Buffer): AddressScope {
  const first = bytes[0] ?? 0;
  const second = bytes[1] ?? 0;
  if (bytes.subarray(0, 12).every((x) => x === 0)) {
    const tail = bytes.readUInt32BE(12);
    if (tail === 0) return 'unspecified';
    return tail === 1 ? 'loopback' : 'reserved';
  }
  if (first === 0xff) return 'multicast';
  if (first === 0xfe && (second & 0xc0) === 0x80) return 'link-local';
  if (first === 0xfe && (second & 0xc0) === 0xc0) return 'reserved';
  if ((first & 0xfe) === 0xfc) return 'unique-local';
  return 'global';
}

/** The scope of an IP literal (IPv4 dotted, IPv6 text), or null when `host` is not one. */
export function addressScope(host: string): AddressScope | null {
  const bytes = ipToBytes(host);
  if (!bytes) return null;
  if (isV4Mapped(bytes) || NAT64_PREFIX.equals(bytes.subarray(0, 12)))
    return ipv4Scope(bytes[12] ?? 0, bytes[13] ?? 0, bytes[14] ?? 0, bytes[15] ?? 0);
  return ipv6Scope(bytes);
}

/** A node's own addresses, normalized: its hosts, and its endpoints (host and port). */
export class OwnAddresses {
  readonly #hosts = new Set<string>();
  readonly #endpoints = new Set<string>();

  constructor(list: readonly DiscoAddress[] = []) {
    for (const a of list) {
      const host = normalizeIp(a.host);
      if (!host) continue;
      this.#hosts.add(host);
      this.#endpoints.add(`${host}|${a.port}`);
    }
  }

  hasHost(host: string): boolean {
    return this.#hosts.has(host);
  }

  hasEndpoint(host: string, port: number): boolean {
    return this.#endpoints.has(`${host}|${port}`);
  }
}

/**
 * Why `address` must not be probed, or null when it may be. `observed`: it is where an authenticated datagram
 * came from, not a claim (see the top of this file).
 */
export function candidateRefusal(
  address: DiscoAddress,
  o: { own: OwnAddresses; observed?: boolean },
): CandidateRefusal | null {
  const host = normalizeIp(address.host);
  const scope = host ? addressScope(host) : null;
  if (!host || !scope || !Number.isInteger(address.port) || address.port < 1 || address.port > 65_535)
    return 'bad-address';
  if (o.observed) {
    if (o.own.hasEndpoint(host, address.port)) return 'own-address';
    return scope !== 'loopback' && isRefusedScope(scope) ? scope : null;
  }
  if (isRefusedScope(scope)) return scope;
  return o.own.hasHost(host) ? 'own-address' : null;
}

/** A zero counter per refusal reason. */
export function emptyRefusalCounts(): Record<CandidateRefusal, number> {
  return {
    'bad-address': 0,
    unspecified: 0,
    loopback: 0,
    'link-local': 0,
    multicast: 0,
    broadcast: 0,
    reserved: 0,
    'own-address': 0,
  };
}
