/**
 * Which HTTP CONNECT proxy (if any) the agent uses for a destination. Each setting is taken from the
 * first layer that has it:
 *   1. flags: `--proxy URL` (both https:// and http:// destinations), `--proxy-ca-file FILE`;
 *   2. the environment: https_proxy / HTTPS_PROXY, http_proxy / HTTP_PROXY, no_proxy / NO_PROXY
 *      (the lowercase name wins when both are set and non-empty, as in curl);
 *   3. the relay's agent values: `httpsProxy`, `httpProxy`, `noProxy`, `caBundle` (PEM of the proxy's CA).
 * An https:// (or wss://) destination uses the https proxy, an http:// one the http proxy; neither
 * falls back to the other. NO_PROXY (no_proxy.ts) exempts destinations from either.
 * Proxy URLs may carry basic auth (`http://user:pa%40ss@proxy:3128`); redactUrl() hides the password
 * in every message.
 */
import { TunnelError } from '../../errors.js';
import { type NoProxy, parseNoProxy } from './no-proxy.js';

export type ProxySource = 'flag' | 'environment' | 'values' | 'none';

export interface ProxyValues {
  readonly httpProxy?: unknown;
  readonly httpsProxy?: unknown;
  readonly noProxy?: unknown;
  readonly caBundle?: unknown;
}

export interface ProxyInputs {
  /** `--proxy URL`. */
  readonly flag?: string | null | undefined;
  /** PEM text of `--proxy-ca-file` (read by the caller). */
  readonly flagCa?: string | null | undefined;
  readonly env?: NodeJS.ProcessEnv;
  /** The relay's agent values (a map; other keys are ignored). */
  readonly values?: ProxyValues | undefined;
}

export interface ProxyChoice {
  readonly url: URL;
  readonly source: ProxySource;
}

export interface ProxySettings {
  readonly https: ProxyChoice | null;
  readonly http: ProxyChoice | null;
  readonly noProxy: NoProxy;
  readonly noProxySource: ProxySource;
  /** PEM CA certificate(s) to verify an https:// proxy with (else the system roots). */
  readonly proxyCa: string | null;
}

export const NO_PROXY_SETTINGS: ProxySettings = {
  https: null,
  http: null,
  noProxy: parseNoProxy(''),
  noProxySource: 'none',
  proxyCa: null,
};

/** The URL with its password replaced by `***` (user names are kept: they help to debug 407s). */
export function redactUrl(url: URL | string): string {
  const text = String(url);
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return redactText(text);
  }
  // Only these schemes have a user:password@ authority that URL parses; anything else ("u:pw@host")
  // is treated as text.
  if (!['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol)) return redactText(text);
  if (u.password !== '') u.password = '***';
  return u.protocol === 'http:' || u.protocol === 'https:' ? u.href.replace(/\/$/, '') : u.href;
}

/** Text that is not a URL: hides whatever sits between the first ':' of the user info and the last '@'. */
function redactText(text: string): string {
  const at = text.lastIndexOf('@');
  if (at < 0) return text;
  const scheme = text.indexOf('://');
  const start = scheme >= 0 && scheme < at ? scheme + 3 : 0;
  const colon = text.indexOf(':', start);
  if (colon < 0 || colon > at) return text;
  return `${text.slice(0, colon)}:***${text.slice(at)}`;
}

/** Parses a proxy URL (http:// or https://, host required, no path). Errors never show the password. */
export function parseProxyUrl(text: string, what: string): URL {
  const trimmed = text.trim();
  // Messages show what was typed with anything between user: and the last @ hidden.
  const shown = redactText(trimmed);
  // `proxy:3128` (no scheme) means http://proxy:3128, as in curl.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new TunnelError(
      'BAD_INPUT',
      `${what} '${shown}' is not a URL; expected http://[user:pass@]host:port`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new TunnelError(
      'BAD_INPUT',
      `${what} '${shown}' uses ${u.protocol}//; only http:// and https:// proxies (HTTP CONNECT) are supported`,
    );
  }
  if (u.hostname === '' || (u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.hash !== '') {
    throw new TunnelError(
      'BAD_INPUT',
      `${what} '${shown}' must be http(s)://[user:pass@]host[:port] with no path`,
    );
  }
  return u;
}

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const lower = env[name.toLowerCase()];
  if (lower !== undefined && lower.trim() !== '') return lower;
  const upper = env[name.toUpperCase()];
  if (upper !== undefined && upper.trim() !== '') return upper;
  return undefined;
}

function valueString(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

function pick(
  flag: string | undefined,
  env: string | undefined,
  values: string | undefined,
  names: readonly [string, string, string],
): ProxyChoice | null {
  if (flag) return { url: parseProxyUrl(flag, names[0]), source: 'flag' };
  if (env) return { url: parseProxyUrl(env, names[1]), source: 'environment' };
  if (values) return { url: parseProxyUrl(values, names[2]), source: 'values' };
  return null;
}

export function resolveProxySettings(inputs: ProxyInputs): ProxySettings {
  const env = inputs.env ?? process.env;
  const flag = valueString(inputs.flag);
  const v = inputs.values ?? {};
  const https = pick(flag, envValue(env, 'HTTPS_PROXY'), valueString(v.httpsProxy), [
    '--proxy',
    'HTTPS_PROXY',
    'agent value httpsProxy',
  ]);
  const http = pick(flag, envValue(env, 'HTTP_PROXY'), valueString(v.httpProxy), [
    '--proxy',
    'HTTP_PROXY',
    'agent value httpProxy',
  ]);
  const envNo = env.no_proxy !== undefined && env.no_proxy !== '' ? env.no_proxy : env.NO_PROXY;
  const valuesNo = valueString(v.noProxy);
  const noProxySource: ProxySource =
    envNo !== undefined && envNo !== '' ? 'environment' : valuesNo ? 'values' : 'none';
  const noProxy = parseNoProxy(noProxySource === 'environment' ? envNo : valuesNo);
  const proxyCa = valueString(inputs.flagCa) ?? valueString(v.caBundle) ?? null;
  return { https, http, noProxy, noProxySource, proxyCa };
}

export interface Target {
  /** `https:`, `wss:`, `http:` or `ws:` */
  readonly protocol: string;
  readonly hostname: string;
  readonly port: number;
}

/** The target of a URL, with the scheme's default port filled in. */
export function targetOf(url: URL | string): Target {
  const u = typeof url === 'string' ? new URL(url) : url;
  const secure = u.protocol === 'https:' || u.protocol === 'wss:';
  return { protocol: u.protocol, hostname: u.hostname, port: Number(u.port) || (secure ? 443 : 80) };
}

/** The proxy a connection to `target` goes through, or null for a direct connection. */
export function proxyFor(settings: ProxySettings, target: Target): ProxyChoice | null {
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const choice = secure ? settings.https : settings.http;
  if (!choice) return null;
  if (settings.noProxy.matches(target.hostname, target.port)) return null;
  return choice;
}

/** One line for logs: which proxy applies to the target and why (no password). */
export function describeProxy(settings: ProxySettings, target: Target): string {
  const p = proxyFor(settings, target);
  const dest = `${target.hostname}:${target.port}`;
  if (p) return `${dest} via proxy ${redactUrl(p.url)} (from ${p.source})`;
  const configured =
    target.protocol === 'https:' || target.protocol === 'wss:' ? settings.https : settings.http;
  return configured ? `${dest} direct (NO_PROXY)` : `${dest} direct (no proxy configured)`;
}
