/**
 * Proxy settings turned into what the agent's two transports take: a `connectVia` for the relay HTTP
 * client (undici; shared/kit/http/dispatcher.ts) and an HTTP agent for the relay WebSocket (`ws`). Both
 * decide per destination (NO_PROXY), so one set of settings serves every relay URL.
 */
import type { Agent as HttpAgent } from 'node:http';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { TunnelError } from '../../errors.js';
import type { ConnectVia } from '../http/dispatcher.js';
import { proxyConnectVia } from './connect-via.js';
import { type ProxySettings, proxyFor, type Target, targetOf } from './proxy-config.js';
import { ProxyWsAgent } from './ws-agent.js';

export const DIRECT_CONNECT_TIMEOUT_MS = 10_000;

function directConnect(host: string, port: number, timeoutMs: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host, port });
    const t = setTimeout(() => {
      s.destroy();
      reject(new TunnelError('TIMEOUT', `TCP connect to ${host}:${port} took over ${timeoutMs} ms`));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(t);
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(t);
      reject(err);
    });
  });
}

/**
 * The relay HTTP client's connectVia for `protocol` (https: or http:), or undefined when no proxy is
 * configured for it at all (the dispatcher then connects directly as before).
 */
export function relayConnectVia(settings: ProxySettings, protocol = 'https:'): ConnectVia | undefined {
  const configured = protocol === 'https:' ? settings.https : settings.http;
  if (!configured) return undefined;
  const via = proxyConnectVia(configured.url, { ca: settings.proxyCa });
  return (host, port) => {
    const target: Target = { protocol, hostname: host, port };
    return proxyFor(settings, target)
      ? via(host, port)
      : directConnect(host, port, DIRECT_CONNECT_TIMEOUT_MS);
  };
}

/** The HTTP agent for a WebSocket to `url` (wss://...), or undefined for a direct connection. */
export function wsAgentFor(settings: ProxySettings, url: string): HttpAgent | undefined {
  const p = proxyFor(settings, targetOf(url));
  return p ? new ProxyWsAgent(p.url, { ca: settings.proxyCa }) : undefined;
}
