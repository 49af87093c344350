/**
 * The hub's UDP port (`--udp-port`, default 51820): standard WireGuard straight to the hub node, for agents
 * with a direct path and for stock WireGuard peers. Bound before the relay issues anything, so a busy port
 * fails the start with BAD_CONFIG naming the flag. The data plane attaches the hub's endpoint, which listens
 * through its UDP edge (shared/net/tunnel-endpoint/udp-edge.ts: STUN, disco, WireGuard); every datagram that
 * does not authenticate is dropped and counted by reason (the device's reasons; `no-hub` while nothing is
 * attached; `no-disco` for disco messages while detached; `stun-unexpected` for a STUN answer to no request of
 * the hub's `--stun-server` round). The port is
 * advertised to agents (`tunnel.udpEndpoint`) only while the hub listens on it.
 */

import { TunnelError } from '../../../shared/errors.js';
import type { DiscoAddress } from '../../../shared/net/disco/disco-codec.js';
import { resolveEndpoint } from '../../../shared/net/disco/resolve-endpoint.js';
import type { UdpCandidatesOptions } from '../../../shared/net/tunnel-endpoint/endpoint-candidates.js';
import type {
  ListenableUdp,
  UdpListening,
  UdpListenOptions,
} from '../../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import type { UdpEdgeOutcome } from '../../../shared/net/tunnel-endpoint/udp-edge.js';
import { UdpTransport } from '../../../shared/net/tunnel-endpoint/udp-transport.js';
import { noDeviceDrops, type ReceiveDrop } from '../../../shared/net/wireguard/device.js';
import { bindHint } from '../../ops/port-hold.js';

export type HubUdpDropReason = ReceiveDrop | 'no-hub' | 'no-disco' | 'stun-unexpected';

/** A zero count for every reason: the device's, a peer's transport drops, and the hub socket's own. */
function noDrops(): Record<HubUdpDropReason, number> {
  return {
    ...noDeviceDrops(),
    decrypt: 0,
    'expired-keypair': 0,
    'no-hub': 0,
    'no-disco': 0,
    'stun-unexpected': 0,
  };
}

export interface HubUdpStats {
  received: number;
  /** Datagrams that authenticated (handshake messages and transport data of a peer). */
  authenticated: number;
  dropped: Record<HubUdpDropReason, number>;
  sent: number;
  /** Sends refused (closed or backed-up socket) or failed. */
  sendFailed: number;
  /** sendmsg calls that sent a run of datagrams (UDP GSO); 0 on node:dgram. */
  runsSent: number;
  /** Reads that returned a run of more than one datagram (UDP GRO); 0 on node:dgram. */
  runsReceived: number;
}

export interface HubUdpOptions {
  host: string;
  port: number;
  /** `host:port` agents should use (`--udp-public-endpoint`); null: the public URL's host and the bound port. */
  publicEndpoint: string | null;
}

/** The hub's endpoint as the port needs it (TunnelEndpoint: it listens through its UDP edge). */
export interface HubUdpEndpoint {
  listenUdp(transport: ListenableUdp, o: UdpListenOptions): UdpListening;
}

export class HubUdp {
  readonly transport: UdpTransport;
  readonly #publicEndpoint: string | null;
  readonly #dropped = noDrops();
  #authenticated = 0;
  #hub: UdpListening | null = null;

  private constructor(transport: UdpTransport, publicEndpoint: string | null) {
    this.transport = transport;
    this.#publicEndpoint = publicEndpoint;
    this.#detached();
  }

  /** Binds the port; BAD_CONFIG naming `--udp-port` when it cannot (busy, no such address). */
  static async open(o: HubUdpOptions): Promise<HubUdp> {
    try {
      return new HubUdp(await UdpTransport.open({ host: o.host, port: o.port }), o.publicEndpoint);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      throw new TunnelError(
        'BAD_CONFIG',
        `--udp-port: cannot bind ${o.host}:${o.port} on UDP (${code})${bindHint(code, '--udp-port (or --udp-port off)')}`,
      );
    }
  }

  /**
   * The hub's endpoint takes the port's datagrams from now on and, with `candidates`, gathers and advertises the
   * port's candidates (STUN Binding successes go to its `--stun-server` round then, to WireGuard otherwise).
   */
  attach(endpoint: HubUdpEndpoint, candidates?: UdpCandidatesOptions): void {
    this.#hub?.stop();
    this.#hub = endpoint.listenUdp(this.transport, { candidates, onOutcome: (o) => this.#count(o) });
  }

  /** The hub stopped: datagrams are dropped as `no-hub`, the port is no longer advertised nor gathered for. */
  detach(): void {
    this.#hub?.stop();
    this.#hub = null;
    this.#detached();
  }

  /** The `host:port` agents are told to use, or null while no hub listens. */
  advertised(publicUrl: string): string | null {
    if (this.#hub === null) return null;
    return this.#publicEndpoint ?? `${new URL(publicUrl).hostname}:${this.transport.port}`;
  }

  /**
   * The port's own addresses, which agents' candidates may never name (shared/net/disco/candidate-address.ts): the
   * bound address and port, and the endpoint agents are told to use (a name resolved; left out when it does not
   * resolve). Before the relay listens, a public URL that is not set yet is the listen address's own: the
   * interface addresses (the hub's candidates) cover it.
   */
  async ownAddresses(publicUrl: string): Promise<DiscoAddress[]> {
    const port = this.transport.port;
    const out: DiscoAddress[] = [{ host: this.transport.address, port }];
    const urlEndpoint = URL.canParse(publicUrl) ? `${new URL(publicUrl).hostname}:${port}` : null;
    const told = await resolveEndpoint(this.#publicEndpoint ?? urlEndpoint);
    if (told) out.push(told);
    return out;
  }

  /**
   * `--udp-public-endpoint` resolved, offered to agents in call-me-maybe beside the interface addresses (a
   * replica of a fleet behind its own Service or port forward: the only address of its own an agent reaches);
   * null when not set or it does not resolve.
   */
  async publicCandidate(): Promise<DiscoAddress | null> {
    return this.#publicEndpoint ? await resolveEndpoint(this.#publicEndpoint) : null;
  }

  get stats(): HubUdpStats {
    const t = this.transport.stats;
    const gso = this.transport.gso;
    return {
      received: t.received,
      authenticated: this.#authenticated,
      dropped: {
        ...this.#dropped,
        'no-hub': this.#dropped['no-hub'] + t.unclaimed,
        'no-disco': t.discoUnhandled,
      },
      sent: t.sent,
      sendFailed: t.refused + t.sendErrors,
      runsSent: gso?.sends ?? 0,
      runsReceived: gso?.runReads ?? 0,
    };
  }

  close(): Promise<void> {
    this.#hub?.stop();
    this.#hub = null;
    return this.transport.close();
  }

  #count(outcome: UdpEdgeOutcome): void {
    if (outcome === null) this.#authenticated++;
    else if (outcome !== 'stun') this.#dropped[outcome]++;
  }

  #detached(): void {
    this.transport.listen({
      onWireGuard: () => {
        this.#dropped['no-hub']++;
      },
    });
  }
}

/** The hub's UDP port as configured: null when `--udp-port off`; BAD_CONFIG when it cannot bind. */
export function openHubUdp(config: {
  listen: { host: string };
  udpPort: number | null;
  udpPublicEndpoint: string | null;
}): Promise<HubUdp | null> {
  if (config.udpPort === null) return Promise.resolve(null);
  return HubUdp.open({
    host: config.listen.host,
    port: config.udpPort,
    publicEndpoint: config.udpPublicEndpoint,
  });
}
