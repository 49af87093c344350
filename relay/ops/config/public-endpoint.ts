/**
 * `--udp-public-endpoint HOST:PORT`: the address agents reach the hub's UDP port at when it is not the
 * relay's own (a pod behind a Service, a NAT with a port forward). HOST is a DNS name, an IPv4 address or
 * an IPv6 address in brackets; PORT 1-65535.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { TunnelError } from '../../../shared/errors.js';

const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/;
const DNS_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

function validHost(host: string, bracketed: boolean): boolean {
  if (bracketed) return isIPv6(host);
  if (isIPv4(host)) return true;
  if (/^[0-9.]+$/.test(host) || host.length > 253) return false; // looks numeric but is no IPv4 address
  return host.split('.').every((l) => DNS_LABEL.test(l));
}

/**
 * `HOST:PORT` as agents get it (IPv6 in brackets, names lower-cased); BAD_CONFIG naming `key`, where it came
 * from and the value otherwise.
 */
export function parseHostPortEndpoint(value: unknown, key: string, source: string): string {
  const text = typeof value === 'string' ? value : '';
  const m = HOST_PORT.exec(text);
  const host = m ? (m[1] ?? m[2] ?? '') : '';
  const port = m ? Number(m[3]) : 0;
  if (!m || !validHost(host, m[1] !== undefined) || port < 1 || port > 65535) {
    throw new TunnelError(
      'BAD_CONFIG',
      `${key} (${source}): expected HOST:PORT (IPv6 as [2001:db8::1]:51820, port 1-65535), ` +
        `got ${JSON.stringify(typeof value === 'string' ? value.slice(0, 100) : value)}`,
    );
  }
  return m[1] !== undefined ? `[${host.toLowerCase()}]:${port}` : `${host.toLowerCase()}:${port}`;
}

/** The endpoint as agents get it (`host:port`, IPv6 in brackets); BAD_CONFIG naming the flag otherwise. */
export function parseUdpPublicEndpoint(value: unknown, source: string): string {
  return parseHostPortEndpoint(value, 'udp-public-endpoint', source);
}
