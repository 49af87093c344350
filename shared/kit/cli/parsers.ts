/**
 * Flag value parsers shared by both CLIs. Each returns the parsed value or throws BAD_INPUT (or
 * INVALID_NAME) with one line naming the flag, the bad value and what would be valid. Values that may
 * be secrets (PSKs, keys) are never parsed here, so never echoed.
 */

import { MAX_CLAIM_KEY, MAX_CLAIM_VALUE, MAX_CLAIMS } from '../../api/claim-limits.js';
import { TunnelError } from '../../errors.js';

export { MAX_CLAIM_KEY, MAX_CLAIM_VALUE, MAX_CLAIMS };

const MAX_ECHO = 80;

/** The bad value as shown in a message: quoted, cut to 80 characters, control characters escaped. */
export function shown(value: string): string {
  const cut = value.length > MAX_ECHO ? `${value.slice(0, MAX_ECHO)}...` : value;
  return JSON.stringify(cut);
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 label: 1-63 characters of a-z, 0-9 and '-', starting and ending alphanumeric. */
export function parseClusterName(value: string, flag = 'cluster name'): string {
  if (value.length <= 63 && DNS1123_LABEL.test(value)) return value;
  throw new TunnelError(
    'INVALID_NAME',
    `${flag} ${shown(value)} is not a DNS-1123 label: use 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit`,
  );
}

/** A relay URL: https://host[:port][/prefix], without query, fragment or credentials. */
export function parseRelayUrl(value: string, flag = '--relay'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TunnelError('BAD_INPUT', `${flag} ${shown(value)} is not a URL: expected https://HOST[:PORT]`);
  }
  if (url.protocol !== 'https:') {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} must use https:// (the relay only speaks TLS)`,
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} must be https://HOST[:PORT][/PATH] without credentials, query or fragment`,
    );
  }
  return url.href.replace(/\/+$/, '');
}

/** A plain http(s) URL (for --upstream and --public-url). */
export function parseHttpUrl(value: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} is not a URL: expected http(s)://HOST[:PORT]`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TunnelError('BAD_INPUT', `${flag} ${shown(value)} must be an http:// or https:// URL`);
  }
  return url.href.replace(/\/+$/, '');
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * HOST:PORT, with IPv6 hosts in brackets ([::1]:443). Port 0 is allowed only when `allowZero`
 * (listen addresses: pick a free port).
 */
export function parseHostPort(value: string, flag: string, allowZero = false): HostPort {
  const bad = () =>
    new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} is not HOST:PORT: expected a host name, IPv4 or [IPv6] address, ':' and a port ${allowZero ? '0' : '1'}-65535`,
    );
  let host: string;
  let portText: string;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0 || value[end + 1] !== ':') throw bad();
    host = value.slice(1, end);
    portText = value.slice(end + 2);
    if (!/^[0-9a-fA-F:.]+$/.test(host) || !host.includes(':')) throw bad();
  } else {
    const i = value.lastIndexOf(':');
    if (i <= 0) throw bad();
    host = value.slice(0, i);
    portText = value.slice(i + 1);
    if (!(IPV4.test(host) || HOST_NAME.test(host)) || /^[0-9.]+$/.test(host) !== IPV4.test(host)) throw bad();
  }
  const port = parsePortNumber(portText);
  if (port === undefined || (port === 0 && !allowZero)) throw bad();
  return { host, port };
}

/** A port in canonical decimal: `01` is refused, so what was typed is exactly the port that is used. */
function parsePortNumber(text: string): number | undefined {
  if (!/^(0|[1-9]\d{0,4})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 65535 ? n : undefined;
}

/** A port number or `off` (for --udp-port / --stun-port). */
export function parsePortOrOff(value: string, flag: string): number | 'off' {
  if (value === 'off') return 'off';
  const n = parsePortNumber(value);
  if (n === undefined) {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} is not valid: expected a port 0-65535 or 'off'`,
    );
  }
  return n;
}

const CLAIM_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$/;

/** KEY=VALUE for --claim: the key like a Kubernetes label key, the value any text up to 1 KiB. */
export function parseClaim(value: string, flag = '--claim'): [string, string] {
  const eq = value.indexOf('=');
  const key = eq < 0 ? '' : value.slice(0, eq);
  const val = eq < 0 ? '' : value.slice(eq + 1);
  if (eq <= 0 || key.length > MAX_CLAIM_KEY || !CLAIM_KEY.test(key)) {
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} is not KEY=VALUE: the key is 1-${MAX_CLAIM_KEY} characters of letters, digits, '.', '_', '/', '-', starting and ending with a letter or digit`,
    );
  }
  if (val.length > MAX_CLAIM_VALUE) {
    throw new TunnelError('BAD_INPUT', `${flag} ${key}: value is over ${MAX_CLAIM_VALUE} characters`);
  }
  return [key, val];
}

/** Folds repeated --claim flags into a map; later keys win; at most MAX_CLAIMS keys. */
export function collectClaims(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const [k, val] = parseClaim(v);
    out[k] = val;
  }
  if (Object.keys(out).length > MAX_CLAIMS) {
    throw new TunnelError(
      'BAD_INPUT',
      `--claim given ${Object.keys(out).length} keys; at most ${MAX_CLAIMS}`,
    );
  }
  return out;
}

const ROLE = /^(admin|viewer|bootstrap|group-editor:[a-z0-9]([-a-z0-9]*[a-z0-9])?)$/;

/** An access key role: admin, viewer, bootstrap or group-editor:GROUP. */
export function parseRole(value: string): string {
  if (ROLE.test(value) && value.length <= 80) return value;
  throw new TunnelError(
    'BAD_INPUT',
    `--role ${shown(value)} is not a role: expected admin, viewer, bootstrap or group-editor:GROUP (GROUP a DNS-1123 label)`,
  );
}

/** Builds an enum parser: the value must be one of `choices`. */
export function oneOf<T extends string>(flag: string, choices: readonly T[]): (value: string) => T {
  return (value) => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${shown(value)} is not valid: expected one of ${choices.join(', ')}`,
    );
  };
}

/** Commander collector for repeatable flags. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
