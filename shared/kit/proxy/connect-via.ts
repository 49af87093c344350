/**
 * Raw byte streams to host:port through an HTTP CONNECT proxy, built on undici's own CONNECT support
 * (Client#connect), for the relay dispatcher's `connectVia` hook (shared/kit/http/dispatcher.ts). The
 * dispatcher then runs TLS and the CA pin check over the tunnel, so the proxy never sees the relay's
 * TLS session in the clear.
 *
 *   CONNECT relay.example:443 HTTP/1.1
 *   host: relay.example:443
 *   proxy-authorization: Basic base64(user:pass)     (only when the proxy URL has credentials)
 *
 * A refusal (any status but 200), a failure to reach the proxy, a drop or the deadline become
 * PROXY_FAILED naming the proxy (password redacted), the destination and what the proxy answered.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { Client } from 'undici';
import { TunnelError } from '../../errors.js';
import type { ConnectVia } from '../http/dispatcher.js';
import { redactUrl } from './proxy-config.js';

export const DEFAULT_PROXY_CONNECT_TIMEOUT_MS = 10_000;

export interface ProxyConnectOptions {
  /** PEM CA certificate(s) for an https:// proxy (else the system roots). */
  readonly ca?: string | null | undefined;
  /** Proxy TCP/TLS connect + CONNECT answer limit. */
  readonly timeoutMs?: number;
}

/** The Proxy-Authorization value for a proxy URL with user:pass@ (percent-decoded), or undefined. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === '' && proxy.password === '') return undefined;
  const user = decodeURIComponent(proxy.username);
  const pass = decodeURIComponent(proxy.password);
  return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
}

/** `host:port` as a CONNECT request target (IPv6 literals in brackets). */
export function authority(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${h}:${port}`;
}

/** The PROXY_FAILED error for a proxy's non-200 answer to CONNECT. */
export function proxyRefused(proxy: URL, dest: string, status: number): TunnelError {
  const text = STATUS_CODES[status] ?? 'unknown status';
  const hint =
    status === 407 || status === 401 // tinyproxy answers 401 to wrong credentials, 407 to none
      ? proxy.username === ''
        ? ' (the proxy wants credentials: put user:password@ in the proxy URL)'
        : ' (the proxy refused the credentials in the proxy URL)'
      : '';
  return new TunnelError(
    'PROXY_FAILED',
    `proxy ${redactUrl(proxy)} answered ${status} ${text} to CONNECT ${dest}${hint}`,
  );
}

/** The PROXY_FAILED error for a proxy that could not be reached or dropped the CONNECT. */
export function proxyUnreachable(proxy: URL, dest: string, err: unknown): TunnelError {
  const code = (err as { code?: string })?.code;
  const msg = err instanceof Error ? err.message : String(err);
  const why = code && code !== 'UND_ERR_SOCKET' ? code : msg;
  return new TunnelError('PROXY_FAILED', `proxy ${redactUrl(proxy)} failed for CONNECT ${dest}: ${why}`, {
    cause: err,
  });
}

/** A ConnectVia that opens every connection as a CONNECT tunnel through `proxy`. */
export function proxyConnectVia(proxy: URL, opts: ProxyConnectOptions = {}): ConnectVia {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROXY_CONNECT_TIMEOUT_MS;
  const auth = proxyAuthorization(proxy);
  return async (host: string, port: number): Promise<Duplex> => {
    const dest = authority(host, port);
    // One client per tunnel: after CONNECT undici hands the socket over, and closing the client
    // leaves that socket to us.
    const client = new Client(proxy.origin, {
      connect: { timeout: timeoutMs, ca: opts.ca || undefined },
    });
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await client.connect({
        path: dest,
        headers: { host: dest, 'proxy-authorization': auth },
        signal,
      });
      if (res.statusCode !== 200) {
        res.socket.destroy();
        throw proxyRefused(proxy, dest, res.statusCode);
      }
      // Lets the dispatcher name the proxy when the tunnel drops before TLS is up.
      return Object.assign(res.socket, { viaDescription: `proxy ${redactUrl(proxy)}` });
    } catch (err) {
      if (err instanceof TunnelError) throw err;
      if (signal.aborted) {
        throw new TunnelError(
          'PROXY_FAILED',
          `proxy ${redactUrl(proxy)} did not answer CONNECT ${dest} within ${timeoutMs} ms`,
        );
      }
      throw proxyUnreachable(proxy, dest, err);
    } finally {
      void client.close().catch(() => {});
    }
  };
}
