/**
 * A bare Device over the tunnel endpoint's UDP transport (shared/net/tunnel-endpoint/udp-transport.ts), the one
 * way WireGuard runs over UDP here, with plain WireGuard endpoints `udp:HOST:PORT` (IPv6 hosts in
 * brackets) instead of paths: for the interop tests, which configure a device as wireguard-go would be.
 * Datagrams go to Device.receiveFrom, so a peer's endpoint follows its latest authenticated datagram.
 */
import { isIP } from 'node:net';
import { TunnelError } from '../../shared/errors.js';
import { UdpTransport } from '../../shared/net/tunnel-endpoint/udp-transport.js';
import {
  type DatagramSource,
  Device,
  type DeviceOptions,
  type Endpoint,
} from '../../shared/net/wireguard/device.js';

export interface UdpEndpoint extends Endpoint {
  readonly host: string;
  readonly port: number;
}

/** What a UDP endpoint sends through (a UdpBind's transport). */
export interface UdpSender {
  send(datagram: Buffer, host: string, port: number): boolean;
}

const NO_SENDER: UdpSender = { send: () => false };

/** `udp:HOST:PORT`, sending through `via` (nothing is sent without one: key checks only). */
export function udpEndpoint(host: string, port: number, via: UdpSender = NO_SENDER): UdpEndpoint {
  if (!isIP(host))
    throw new TunnelError('BAD_INPUT', `UDP endpoint host ${JSON.stringify(host)} is not an IP address`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TunnelError('BAD_INPUT', `UDP endpoint port ${port} must be 1..65535`);
  }
  return {
    key: isIP(host) === 6 ? `udp:[${host}]:${port}` : `udp:${host}:${port}`,
    host,
    port,
    send: (d) => via.send(d, host, port),
  };
}

/** Parses `udp:HOST:PORT` (or `udp:[V6]:PORT`). */
export function parseUdpEndpoint(key: string): UdpEndpoint {
  const m = /^udp:(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(key);
  if (!m)
    throw new TunnelError('BAD_INPUT', `endpoint ${JSON.stringify(key.slice(0, 64))} is not udp:HOST:PORT`);
  return udpEndpoint(m[1] ?? m[2] ?? '', Number(m[3]));
}

export interface UdpBindOptions extends Omit<DeviceOptions<UdpEndpoint>, 'onAuthenticated' | 'sendToSource'> {
  /** Local address to bind; default 0.0.0.0. */
  host?: string;
  /** Default 0 (ephemeral). */
  port?: number;
}

/** The endpoint a peer roams to: its current one when `from` is the same address (no allocation). */
function roamTo(current: UdpEndpoint | undefined, from: DatagramSource, via: UdpSender): UdpEndpoint {
  if (current && current.port === from.port && current.host === from.address) return current;
  return udpEndpoint(from.address, from.port, via);
}

export class UdpBind {
  readonly device: Device<UdpEndpoint>;
  readonly transport: UdpTransport;

  private constructor(transport: UdpTransport, opts: UdpBindOptions) {
    this.transport = transport;
    this.device = new Device<UdpEndpoint>({
      ...opts,
      sendToSource: (d, to) => transport.send(d, to.address, to.port),
      onAuthenticated: (peer, source) => {
        if (source) peer.endpoint = roamTo(peer.endpoint, source, transport);
      },
    });
    transport.listen({ onWireGuard: (d, from) => this.device.receiveFrom(d, from) });
  }

  static async open(opts: UdpBindOptions): Promise<UdpBind> {
    const transport = await UdpTransport.open({ host: opts.host ?? '0.0.0.0', port: opts.port ?? 0 });
    return new UdpBind(transport, opts);
  }

  get port(): number {
    return this.transport.port;
  }

  /** The endpoint `udp:HOST:PORT` sending through this bind's socket. */
  to(host: string, port: number): UdpEndpoint {
    return udpEndpoint(host, port, this.transport);
  }

  /** Datagrams the socket refused or failed to send (never thrown). */
  get sendErrors(): number {
    return this.transport.stats.refused + this.transport.stats.sendErrors;
  }

  async close(): Promise<void> {
    this.device.close();
    await this.transport.close();
  }
}
