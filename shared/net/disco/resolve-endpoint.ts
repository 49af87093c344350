/**
 * A UDP peer's `host:port` (a name, an IPv4 address, or an IPv6 address in brackets) as the IP literal and port
 * the direct path sends to (the hub's UDP endpoint, STUN servers; shared/net/disco/candidates.ts takes literals).
 * Names are looked up once, IPv4 preferred (the direct path's sockets are IPv4 unless bound to an IPv6 address).
 */
import { lookup } from 'node:dns/promises';
import { normalizeIp } from '../ip/ip-bytes.js';
import type { DiscoAddress } from './disco-codec.js';

/** `host:port` split (brackets taken off an IPv6 host); undefined when it is not one (port 1-65535). */
export function splitEndpoint(endpoint: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):([0-9]{1,5})$/.exec(endpoint.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}

/** The endpoint with its host as an IP literal; null when it does not parse or the name does not resolve. */
export async function resolveEndpoint(endpoint: string | null | undefined): Promise<DiscoAddress | null> {
  const hp = endpoint ? splitEndpoint(endpoint) : undefined;
  if (!hp) return null;
  const literal = normalizeIp(hp.host);
  if (literal) return { host: literal, port: hp.port };
  try {
    const { address } = await lookup(hp.host, { family: 4 });
    return { host: address, port: hp.port };
  } catch {
    return null;
  }
}
