/**
 * The agent's side of the direct path to the hub: one UDP socket (all IPv4 interfaces, an ephemeral port)
 * that carries WireGuard, disco and STUN; the agent's candidates (local addresses and the reflexive one
 * from the relay's STUN responder and any `--stun-server`, through that same socket; two servers that see
 * different mappings say the NAT maps per destination) sent to the hub in call-me-maybe; and the
 * hub's advertised UDP endpoint (`tunnel.udpEndpoint`) as a candidate the selector always tries.
 *
 * Opened only when the relay advertises a UDP endpoint and `--egress` is not `443-only`: with 443-only the
 * agent sends no UDP at all (no socket, no STUN, no probes). Until the socket is open (or when it cannot be
 * opened) sends are refused, which the selector sees as unanswered probes.
 */
import type { Clock } from '../../shared/clock.js';
import type { StunServer } from '../../shared/net/disco/candidates.js';
import { resolveEndpoint } from '../../shared/net/disco/resolve-endpoint.js';
import type { TunnelEndpoint, UdpListening } from '../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import { UdpTransport } from '../../shared/net/tunnel-endpoint/udp-transport.js';
import type { Tunnel } from '../agent/types.js';

/** Where the UDP socket binds: every IPv4 interface, a port the kernel picks. */
const BIND_HOST = '0.0.0.0';

/** Whether the agent may use UDP to the hub: the relay advertises a port and egress allows it. */
export function directWanted(tunnel: Tunnel, egress: '443-only' | 'auto'): boolean {
  return egress !== '443-only' && !!tunnel.udpEndpoint;
}

export interface AgentDirectOptions {
  readonly clock: Clock;
  readonly tunnel: Tunnel;
  readonly hubKey: Buffer;
  /** `--stun-server` endpoints, asked after the relay's advertised responder. */
  readonly stunServers?: readonly string[];
  readonly log?: (line: string) => void;
}

export class AgentDirect {
  /** What the endpoint sends direct datagrams and disco through (refused until the socket is open). */
  readonly sender: Pick<UdpTransport, 'send' | 'dontFragment'>;
  readonly #options: AgentDirectOptions;
  #transport: UdpTransport | undefined;
  #listening: UdpListening | undefined;
  #closed = false;

  constructor(o: AgentDirectOptions) {
    this.#options = o;
    const transport = (): UdpTransport | undefined => this.#transport;
    this.sender = {
      send: (d, host, port) => transport()?.send(d, host, port) ?? false,
      get dontFragment() {
        return transport()?.dontFragment ?? false;
      },
    };
  }

  /** The socket's port once open. */
  get port(): number | undefined {
    return this.#transport?.port;
  }

  /** Opens the socket and starts gathering candidates for `endpoint`'s disco. Never rejects. */
  async start(endpoint: TunnelEndpoint): Promise<void> {
    const disco = endpoint.disco;
    if (!disco) return;
    try {
      this.#transport = await UdpTransport.open({ host: BIND_HOST, port: 0 });
    } catch (err) {
      this.#options.log?.(`UDP socket for the direct path not opened (${String(err)}); staying on the relay`);
      disco.setConditions({ udp: 'unavailable' });
      return;
    }
    if (this.#closed) return void this.#transport.close();
    const [hubUdp, ...stun] = await Promise.all([
      resolveEndpoint(this.#options.tunnel.udpEndpoint),
      resolveEndpoint(this.#options.tunnel.stunEndpoint),
      ...(this.#options.stunServers ?? []).map((s) => resolveEndpoint(s)),
    ]);
    if (this.#closed) return;
    const transport = this.#transport;
    const stunServers: StunServer[] = [];
    for (const s of stun)
      if (s && !stunServers.some((t) => t.host === s.host && t.port === s.port)) stunServers.push(s);
    const unresolved = (this.#options.stunServers ?? []).filter((_, i) => stun[i + 1] === null);
    if (unresolved.length > 0)
      this.#options.log?.(`--stun-server ${unresolved.join(', ')} does not resolve; not asked`);
    // The endpoint gathers our candidates through the socket and advertises them (endpoint-candidates.ts); the
    // hub's pongs over UDP (the endpoint's disco `onObserved`) tell it where the hub saw our mapping.
    this.#listening = endpoint.listenUdp(transport, { candidates: { stunServers } });
    if (hubUdp) disco.setConfigured(this.#options.hubKey, [hubUdp]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listening?.stop();
    await this.#transport?.close();
  }
}
