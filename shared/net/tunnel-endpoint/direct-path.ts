/**
 * The direct path to one peer: its datagrams go as they are (no framing: headroom and tailroom 0) in UDP
 * datagrams to the peer's address through the endpoint's UDP transport. The address is the one its latest
 * authenticated datagram came from (setRemote, WireGuard roaming; see tunnel-endpoint.ts); nothing else
 * moves it. Its MTU starts at the base and follows the path MTU search (pmtu-probes.ts): setMtu.
 */
import type { DatagramSource } from '../wireguard/peer-host.js';
import type { Path } from './path.js';
import type { UdpTransport } from './udp-transport.js';

/**
 * Largest datagram by default: 1,420 bytes of inner packet plus WireGuard's 32 (header and tag), which an
 * IPv4 or IPv6 UDP packet carries within a 1,500-byte link MTU. PMTU probes may raise it later.
 */
export const DEFAULT_DIRECT_MTU = 1_452;

export interface DirectPathOptions {
  transport: Pick<UdpTransport, 'send'>;
  /** Where to send until a datagram authenticates from elsewhere. */
  remote: DatagramSource;
  mtu?: number;
}

export class DirectPath implements Path {
  readonly kind = 'direct';
  readonly headroom = 0;
  readonly tailroom = 0;
  readonly #transport: Pick<UdpTransport, 'send'>;
  #host: string;
  #port: number;
  #mtu: number;
  #sent = 0;

  constructor(o: DirectPathOptions) {
    this.#transport = o.transport;
    this.#mtu = o.mtu ?? DEFAULT_DIRECT_MTU;
    this.#host = o.remote.address;
    this.#port = o.remote.port;
  }

  get mtu(): number {
    return this.#mtu;
  }

  /** The UDP transport the path sends through. */
  get transport(): Pick<UdpTransport, 'send'> {
    return this.#transport;
  }

  /** Datagrams handed to the transport so far (whether the path carries traffic). */
  get sent(): number {
    return this.#sent;
  }

  /** The path MTU search confirmed (or gave up) a size; true when that changed the MTU. */
  setMtu(mtu: number): boolean {
    if (mtu === this.#mtu) return false;
    this.#mtu = mtu;
    return true;
  }

  /** The address datagrams go to now. */
  get remote(): { host: string; port: number } {
    return { host: this.#host, port: this.#port };
  }

  /** Moves the path to `from`; true when that changed it. */
  setRemote(from: DatagramSource): boolean {
    if (from.port === this.#port && from.address === this.#host) return false;
    this.#host = from.address;
    this.#port = from.port;
    return true;
  }

  send(datagram: Buffer): boolean {
    this.#sent++;
    return this.#transport.send(datagram, this.#host, this.#port);
  }
}
