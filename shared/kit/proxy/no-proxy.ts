/**
 * NO_PROXY lists, the way curl reads them. Entries are separated by commas and/or whitespace and
 * compared case-insensitively, with trailing dots ignored:
 *   - `*`                      every destination bypasses the proxy;
 *   - `example.com`            that domain and every subdomain (`api.example.com`), not `badexample.com`;
 *   - `.example.com`, `*.example.com`  subdomains and (like curl) the domain itself;
 *   - `10.1.2.3`, `::1`, `[::1]`       that IP literal;
 *   - `10.0.0.0/8`, `fd00::/8`         every IP literal inside the CIDR;
 *   - any of the above with `:PORT` (`[v6]:PORT` for IPv6) matches only that destination port.
 * IP rules match only destinations given as IP literals: names are never resolved for the check.
 * Entries that cannot be read (a bad port, a bad prefix) are kept in `invalid` and match nothing.
 */
import { BlockList, isIP } from 'node:net';

/** More entries than any real NO_PROXY list holds; the rest are ignored (counted in `invalid`). */
export const MAX_NO_PROXY_ENTRIES = 1024;

export type NoProxyRule =
  | { readonly kind: 'all' }
  | { readonly kind: 'domain'; readonly domain: string; readonly port: number | null }
  | {
      readonly kind: 'ip';
      readonly address: string;
      readonly prefix: number;
      readonly family: 'ipv4' | 'ipv6';
      readonly port: number | null;
      readonly block: BlockList;
    };

export interface NoProxy {
  readonly rules: readonly NoProxyRule[];
  readonly invalid: readonly string[];
  /** True when a connection to host:port must not use the proxy. */
  matches(host: string, port: number): boolean;
}

const DOMAIN = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;

function parsePort(text: string): number | null | undefined {
  if (!/^[0-9]{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 65_535 ? n : undefined;
}

/** Splits `entry` into host part and optional port; undefined when the port is unreadable. */
function splitPort(entry: string): { host: string; port: number | null } | undefined {
  if (entry.startsWith('[')) {
    const end = entry.indexOf(']');
    if (end < 0) return undefined;
    const host = entry.slice(1, end);
    const rest = entry.slice(end + 1);
    if (rest === '') return { host, port: null };
    if (!rest.startsWith(':')) return undefined;
    const port = parsePort(rest.slice(1));
    return port === undefined ? undefined : { host, port };
  }
  const colons = entry.split(':').length - 1;
  if (colons === 1) {
    const i = entry.indexOf(':');
    const port = parsePort(entry.slice(i + 1));
    return port === undefined ? undefined : { host: entry.slice(0, i), port };
  }
  return { host: entry, port: null }; // no colon, or a bare IPv6 literal (no port possible)
}

function ipRule(
  address: string,
  prefixText: string | undefined,
  port: number | null,
): NoProxyRule | undefined {
  const v = isIP(address);
  if (v === 0) return undefined;
  const family = v === 4 ? 'ipv4' : 'ipv6';
  const max = v === 4 ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^[0-9]{1,3}$/.test(prefixText)) return undefined;
    prefix = Number(prefixText);
    if (prefix > max) return undefined;
  }
  const block = new BlockList();
  block.addSubnet(address, prefix, family);
  return { kind: 'ip', address, prefix, family, port, block };
}

/** Reads one entry (already trimmed and non-empty); undefined when it is not a valid entry. */
export function parseNoProxyEntry(raw: string): NoProxyRule | undefined {
  let entry = raw.toLowerCase();
  if (entry === '*') return { kind: 'all' };
  const hp = splitPort(entry);
  if (!hp) return undefined;
  entry = hp.host;
  const slash = entry.indexOf('/');
  if (slash >= 0) return ipRule(entry.slice(0, slash), entry.slice(slash + 1), hp.port);
  if (isIP(entry) !== 0) return ipRule(entry, undefined, hp.port);
  if (entry.startsWith('*.')) entry = entry.slice(2);
  else if (entry.startsWith('.')) entry = entry.slice(1);
  while (entry.endsWith('.')) entry = entry.slice(0, -1);
  if (!DOMAIN.test(entry)) return undefined;
  return { kind: 'domain', domain: entry, port: hp.port };
}

/** Parses a NO_PROXY value (undefined or empty: no rule). */
export function parseNoProxy(text: string | undefined): NoProxy {
  const rules: NoProxyRule[] = [];
  const invalid: string[] = [];
  for (const part of (text ?? '').split(/[\s,]+/)) {
    if (part === '') continue;
    if (rules.length >= MAX_NO_PROXY_ENTRIES) {
      invalid.push(part);
      continue;
    }
    const rule = parseNoProxyEntry(part);
    if (rule) rules.push(rule);
    else invalid.push(part);
  }
  return {
    rules,
    invalid,
    matches: (host, port) => matchesRules(rules, host, port),
  };
}

/** Lowercase, no brackets, no trailing dots. */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  while (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function matchesRules(rules: readonly NoProxyRule[], rawHost: string, port: number): boolean {
  const host = normalizeHost(rawHost);
  const v = isIP(host);
  for (const r of rules) {
    if (r.kind === 'all') return true;
    if (r.port !== null && r.port !== port) continue;
    if (r.kind === 'domain') {
      if (v !== 0) {
        if (host === r.domain) return true;
        continue;
      }
      if (host === r.domain || host.endsWith(`.${r.domain}`)) return true;
      continue;
    }
    if (v === 0) continue;
    const family = v === 4 ? 'ipv4' : 'ipv6';
    if (family === r.family && r.block.check(host, family)) return true;
  }
  return false;
}
