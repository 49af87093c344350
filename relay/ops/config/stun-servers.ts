/**
 * `--stun-server HOST:PORT` (repeatable): STUN servers the hub asks, through its UDP port, for the address its
 * NAT maps that port to, which it then offers agents as a candidate (a hub behind NAT without a port forward).
 * Two servers at different addresses also tell whether the NAT maps per destination. Flags repeat; the
 * environment (TUNNEL_RELAY_STUN_SERVER) and a config file's string take a comma-separated list, a config file
 * also a YAML list. At most MAX_STUN_SERVERS; duplicates are refused (a typo, and one server counted twice
 * could not tell a varying mapping).
 */
import { TunnelError } from '../../../shared/errors.js';
import { parseHostPortEndpoint } from './public-endpoint.js';

export const MAX_STUN_SERVERS = 4;

/** The servers as `host:port` texts, in the order given; BAD_CONFIG naming the flag and the bad value. */
export function parseStunServers(value: unknown, source: string): string[] {
  const items = Array.isArray(value)
    ? value
    : typeof value === 'string'
      ? value.split(',').map((s) => s.trim())
      : [value];
  if (items.length > MAX_STUN_SERVERS) {
    throw new TunnelError(
      'BAD_CONFIG',
      `stun-server (${source}): at most ${MAX_STUN_SERVERS} servers, got ${items.length}`,
    );
  }
  const out: string[] = [];
  for (const item of items) {
    const endpoint = parseHostPortEndpoint(item, 'stun-server', source);
    if (out.includes(endpoint))
      throw new TunnelError('BAD_CONFIG', `stun-server (${source}): ${JSON.stringify(endpoint)} given twice`);
    out.push(endpoint);
  }
  return out;
}
