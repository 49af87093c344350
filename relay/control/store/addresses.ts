/**
 * Tunnel addresses: one /32 per agent out of 100.64.0.0/10 (RFC 6598 shared address space). The hub
 * node is 100.64.0.1; agents get host numbers 2 .. 2^22-2 (100.64.0.2 .. 100.127.255.254), lowest
 * free first. A number stays allocated until its cluster is deleted or unjoined.
 */
const BASE = (100 << 24) | (64 << 16); // 100.64.0.0 as an unsigned 32-bit value (after >>> 0)
export const HUB_ADDRESS = '100.64.0.1';
export const FIRST_AGENT_INDEX = 2;
export const LAST_AGENT_INDEX = (1 << 22) - 2;

export function indexToAddress(index: number): string {
  if (!Number.isInteger(index) || index < FIRST_AGENT_INDEX || index > LAST_AGENT_INDEX) {
    throw new RangeError(
      `tunnel address index ${index} is outside ${FIRST_AGENT_INDEX}..${LAST_AGENT_INDEX}`,
    );
  }
  const v = (BASE + index) >>> 0;
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

export function addressToIndex(address: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!m) return null;
  const o = m.slice(1).map(Number);
  if (o.some((x) => x > 255)) return null;
  const v = ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0;
  const index = v - (BASE >>> 0);
  return index >= FIRST_AGENT_INDEX && index <= LAST_AGENT_INDEX ? index : null;
}
