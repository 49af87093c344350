/**
 * Every outbound destination the agent uses with given settings (the egress audit):
 *   registration, values, lease   HTTPS to the relay URL (TCP)
 *   relay (DERP)                  the WebSocket at the tunnel's derpUrl (TCP)
 *   STUN, direct WireGuard        UDP, only with --egress auto and when the relay advertises a UDP
 *                                 endpoint; STUN at the advertised stunEndpoint (none when the relay
 *                                 says null), or port 3478 of the UDP host for relays that send no field;
 *                                 and every --stun-server
 * TCP destinations go through the proxy that applies to them (NO_PROXY checked per destination); UDP
 * never does (HTTP CONNECT carries TCP only).
 */

import { type ProxySettings, proxyFor, redactUrl, targetOf } from '../../shared/kit/proxy/proxy-config.js';
import { splitEndpoint } from '../../shared/net/disco/resolve-endpoint.js';

export { splitEndpoint };

export type EgressMode = '443-only' | 'auto';
export type Purpose = 'registration' | 'values' | 'lease' | 'relay (DERP)' | 'STUN' | 'direct WireGuard';

/** The relay's default STUN port (relay/ops/config/config.ts), assumed when a relay does not advertise its STUN endpoint. */
export const DEFAULT_STUN_PORT = 3478;

export interface Destination {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
  readonly purpose: Purpose;
  readonly viaProxy: boolean;
  /** The proxy URL (password redacted), when viaProxy. */
  readonly proxy?: string;
  /** The URL the agent uses (TCP destinations). */
  readonly url?: string;
}

export interface EgressInputs {
  /** https://host:port of the relay (API). */
  readonly relayUrl: string;
  /** wss://host:port/derp (from the registration; derived from relayUrl when unknown). */
  readonly derpUrl?: string | null | undefined;
  /** host:port of the relay's UDP WireGuard endpoint, when it advertises one. */
  readonly udpEndpoint?: string | null | undefined;
  /** host:port of the relay's STUN responder; null: it has none; undefined: not told (older relay). */
  readonly stunEndpoint?: string | null | undefined;
  /** `--stun-server` host:port values, asked besides the relay's responder. */
  readonly stunServers?: readonly string[];
  readonly egress: EgressMode;
  readonly proxy: ProxySettings;
}

/** wss://<relay host:port>/derp for an https relay URL (ws:// for http). */
export function derpUrlFor(relayUrl: string): string {
  const u = new URL(relayUrl);
  u.protocol = u.protocol === 'http:' ? 'ws:' : 'wss:';
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/derp`;
  return u.href;
}

function tcp(url: string, purpose: Purpose, proxy: ProxySettings): Destination {
  const t = targetOf(url);
  const p = proxyFor(proxy, t);
  return {
    host: t.hostname.replace(/^\[|\]$/g, ''),
    port: t.port,
    protocol: 'tcp',
    purpose,
    viaProxy: p !== null,
    proxy: p ? redactUrl(p.url) : undefined,
    url,
  };
}

export function listDestinations(inputs: EgressInputs): Destination[] {
  const relay = inputs.relayUrl.replace(/\/+$/, '');
  const out: Destination[] = [
    tcp(`${relay}/api/v1/register`, 'registration', inputs.proxy),
    tcp(`${relay}/clusters/`, 'values', inputs.proxy),
    tcp(`${relay}/api/v1/agent/lease`, 'lease', inputs.proxy),
    tcp(inputs.derpUrl ?? derpUrlFor(relay), 'relay (DERP)', inputs.proxy),
  ];
  const udp = inputs.udpEndpoint ? splitEndpoint(inputs.udpEndpoint) : undefined;
  if (inputs.egress === 'auto' && udp) {
    const stun =
      inputs.stunEndpoint === undefined
        ? { host: udp.host, port: DEFAULT_STUN_PORT }
        : inputs.stunEndpoint === null
          ? undefined
          : splitEndpoint(inputs.stunEndpoint);
    if (stun) out.push({ ...stun, protocol: 'udp', purpose: 'STUN', viaProxy: false });
    for (const server of inputs.stunServers ?? []) {
      const s = splitEndpoint(server);
      if (s) out.push({ ...s, protocol: 'udp', purpose: 'STUN', viaProxy: false });
    }
    out.push({ ...udp, protocol: 'udp', purpose: 'direct WireGuard', viaProxy: false });
  }
  return out;
}
