/**
 * Tunnel address allocation: each agent gets one /32 out of the carrier-grade NAT range
 * 100.64.0.0/10; the hub node is 100.64.0.1.
 */
import { TunnelError } from '../../errors.js';
import { type Cidr, cidrContains, formatCidr, parseCidr, parseIpv4Address } from './address.js';

export const TUNNEL_POOL: Cidr = parseCidr('100.64.0.0/10');
export const HUB_TUNNEL_ADDRESS: number = parseIpv4Address('100.64.0.1');

/**
 * The lowest free address in `pool`, skipping the network and broadcast addresses (for pools
 * larger than /31), every address in `used` and the hub address. Runs in O(|used| + 1) steps.
 * Throws LIMIT_EXCEEDED when the pool is exhausted.
 */
export function nextFreeAddress(used: ReadonlySet<number>, pool: Cidr = TUNNEL_POOL): number {
  const size = 2 ** (32 - pool.prefixLength);
  const first = pool.prefixLength < 31 ? pool.network + 1 : pool.network;
  const last = pool.prefixLength < 31 ? pool.network + size - 2 : pool.network + size - 1;
  for (let a = first; a <= last; a++) {
    if (a !== HUB_TUNNEL_ADDRESS && !used.has(a)) return a;
  }
  throw new TunnelError('LIMIT_EXCEEDED', `address pool ${formatCidr(pool)} is exhausted`);
}

/** Whether `addr` lies in `pool` and is not its network/broadcast address or the hub's. */
export function isAssignable(addr: number, pool: Cidr = TUNNEL_POOL): boolean {
  if (!cidrContains(pool, addr) || addr === HUB_TUNNEL_ADDRESS) return false;
  if (pool.prefixLength >= 31) return true;
  const broadcast = pool.network + 2 ** (32 - pool.prefixLength) - 1;
  return addr !== pool.network && addr !== broadcast;
}
