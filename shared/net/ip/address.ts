/**
 * IPv4 addresses as unsigned 32-bit numbers (host order), dotted-quad text, and CIDR prefixes.
 * Parsing is strict: four decimal octets 0-255 without leading zeros (so "010.1.1.1" is not
 * silently read as octal or decimal), prefix lengths 0-32.
 */
import { TunnelError } from '../../errors.js';

export interface Cidr {
  /** Network address with the host bits cleared. */
  readonly network: number;
  readonly prefixLength: number;
  readonly mask: number;
}

const OCTET = /^(0|[1-9][0-9]{0,2})$/;

export function maskFor(prefixLength: number): number {
  return prefixLength === 0 ? 0 : (0xffff_ffff << (32 - prefixLength)) >>> 0;
}

/** Parses "a.b.c.d" into a u32. Throws BAD_INPUT naming the text (addresses are not secret). */
export function parseIpv4Address(text: string): number {
  const parts = text.split('.');
  if (parts.length === 4 && text.length <= 15) {
    let v = 0;
    let ok = true;
    for (const p of parts) {
      const n = OCTET.test(p) ? Number(p) : 256;
      if (n > 255) {
        ok = false;
        break;
      }
      v = v * 256 + n;
    }
    if (ok) return v;
  }
  throw new TunnelError(
    'BAD_INPUT',
    `not an IPv4 address: ${JSON.stringify(text.slice(0, 64))} (want a.b.c.d)`,
  );
}

export function formatIpv4Address(addr: number): string {
  return `${addr >>> 24}.${(addr >>> 16) & 255}.${(addr >>> 8) & 255}.${addr & 255}`;
}

export function isIpv4Address(text: string): boolean {
  try {
    parseIpv4Address(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses "a.b.c.d/n" (or a bare address, read as /32). Host bits set below the prefix are
 * cleared, as `wg` does; pass `strict` to reject them instead.
 */
export function parseCidr(text: string, strict = false): Cidr {
  const slash = text.indexOf('/');
  const addrText = slash < 0 ? text : text.slice(0, slash);
  const lenText = slash < 0 ? '32' : text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]?)$/.test(lenText) || Number(lenText) > 32) {
    throw new TunnelError(
      'BAD_INPUT',
      `not an IPv4 CIDR: ${JSON.stringify(text.slice(0, 64))} (prefix length must be 0-32)`,
    );
  }
  const prefixLength = Number(lenText);
  const addr = parseIpv4Address(addrText);
  const mask = maskFor(prefixLength);
  const network = (addr & mask) >>> 0;
  if (strict && network !== addr) {
    throw new TunnelError(
      'BAD_INPUT',
      `CIDR ${text} has host bits set; did you mean ${formatIpv4Address(network)}/${prefixLength}?`,
    );
  }
  return { network, prefixLength, mask };
}

export function formatCidr(c: Cidr): string {
  return `${formatIpv4Address(c.network)}/${c.prefixLength}`;
}

export function cidrContains(c: Cidr, addr: number): boolean {
  return (addr & c.mask) >>> 0 === c.network;
}

/** Number of addresses in the prefix (2^(32-n)). */
export function cidrSize(c: Cidr): number {
  return 2 ** (32 - c.prefixLength);
}
