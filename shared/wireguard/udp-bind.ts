/**
 * Runs a Device over a node:dgram socket. Endpoints are `udp:HOST:PORT` (IPv6 hosts in brackets).
 * Used by the interop tests and by anything that talks WireGuard straight over UDP.
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { TunnelError } from '../errors.js';
import { Device, type DeviceOptions, type Endpoint } from './device.js';

export interface UdpEndpoint extends Endpoint {
  readonly host: string;
  readonly port: number;
}

export function udpEndpoint(host: string, port: number): UdpEndpoint {
  if (!isIP(host))
    throw new TunnelError('BAD_INPUT', `UDP endpoint host ${JSON.stringify(host)} is not an IP address`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TunnelError('BAD_INPUT', `UDP endpoint port ${port} must be 1..65535`);
  }
  return { key: isIP(host) === 6 ? `udp:[${host}]:${port}` : `udp:${host}:${port}`, host, port };
}

/** Parses `udp:HOST:PORT` (or `udp:[V6]:PORT`). */
export function parseUdpEndpoint(key: string): UdpEndpoint {
  const m = /^udp:(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(key);
  if (!m)
    throw new TunnelError('BAD_INPUT', `endpoint ${JSON.stringify(key.slice(0, 64))} is not udp:HOST:PORT`);
  return udpEndpoint(m[1] ?? m[2] ?? '', Number(m[3]));
}

export interface UdpBindOptions extends Omit<DeviceOptions<UdpEndpoint>, 'send'> {
  /** Local address to bind; default 0.0.0.0. */
  host?: string;
  /** Default 0 (ephemeral). */
  port?: number;
}

export class UdpBind {
  readonly device: Device<UdpEndpoint>;
  readonly socket: Socket;
  /** Datagrams the socket refused to send (errors are counted, never thrown). */
  sendErrors = 0;

  private constructor(socket: Socket, opts: UdpBindOptions) {
    this.socket = socket;
    this.device = new Device<UdpEndpoint>({
      ...opts,
      send: (d, e) => {
        socket.send(d, e.port, e.host, (err) => {
          if (err) this.sendErrors++;
        });
        return true;
      },
    });
    socket.on('message', (msg, rinfo) => {
      const v6 = rinfo.family === 'IPv6';
      const key = v6 ? `udp:[${rinfo.address}]:${rinfo.port}` : `udp:${rinfo.address}:${rinfo.port}`;
      const from: UdpEndpoint = { key, host: rinfo.address, port: rinfo.port };
      this.device.receive(msg, from);
    });
    socket.on('error', () => {
      this.sendErrors++;
    });
  }

  static async open(opts: UdpBindOptions): Promise<UdpBind> {
    const host = opts.host ?? '0.0.0.0';
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(opts.port ?? 0, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new UdpBind(socket, opts);
  }

  get port(): number {
    return this.socket.address().port;
  }

  async close(): Promise<void> {
    this.device.close();
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}
