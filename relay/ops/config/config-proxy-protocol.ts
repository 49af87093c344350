/**
 * `--proxy-protocol CIDR[,CIDR...]`: the peers (TCP load balancers) whose connections start with a PROXY header
 * naming the client (relay/ops/proxy-protocol/). Off by default (an empty list): no header is read from anyone.
 * A bare address counts as its /32 (IPv4) or /128 (IPv6).
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { TunnelError } from '../../../shared/errors.js';
import type { Sourced } from './config-store.js';

export interface TrustedCidr {
  readonly network: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/** Entries accepted: far more balancers than any tier has. */
const MAX_CIDRS = 64;
const PREFIX = /^(0|[1-9][0-9]{0,2})$/;

function bad(source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `proxy-protocol (${source}): ${reason}`);
}

function parseCidr(text: string, source: string): TrustedCidr {
  const [network = '', prefixText, extra] = text.split('/');
  const family = isIPv4(network) ? 'ipv4' : isIPv6(network) && !network.includes('%') ? 'ipv6' : null;
  const max = family === 'ipv4' ? 32 : 128;
  const prefix = prefixText === undefined ? max : PREFIX.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (family === null || extra !== undefined || !(prefix <= max)) {
    bad(
      source,
      `${JSON.stringify(text.slice(0, 64))} is not an address or CIDR (e.g. 10.0.0.0/8, 192.0.2.7, 2001:db8::/32)`,
    );
  }
  return { network, prefix, family };
}

/** The trusted peers from a comma-separated list (flag, env) or a YAML list; [] when not given. */
export function parseProxyProtocol(v: Sourced): readonly TrustedCidr[] {
  if (!v) return [];
  const [value, source] = v;
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : null;
  if (items === null) bad(source, 'expected a comma-separated list of CIDRs');
  const texts = items.map((item) => (typeof item === 'string' ? item.trim() : ''));
  if (texts.length > MAX_CIDRS) bad(source, `at most ${MAX_CIDRS} CIDRs, got ${texts.length}`);
  if (texts.some((t) => t === '')) bad(source, 'an entry of the list is empty');
  return texts.map((t) => parseCidr(t, source));
}

/** The list as a BlockList to check peer addresses against (IPv4-mapped IPv6 peers match IPv4 entries). */
export function trustedPeers(cidrs: readonly TrustedCidr[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) list.addSubnet(c.network, c.prefix, c.family);
  return list;
}
