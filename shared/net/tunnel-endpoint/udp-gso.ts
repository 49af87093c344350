/**
 * The optional UDP GSO/GRO addon (native/udp-gso, Linux, built by `npm ci` where a C compiler is present):
 * a socket read on Node's event loop with UDP GRO on (a run of one sender's datagrams in one read), and
 * sendSegments, one sendmsg(2) for a run of datagrams to one destination (UDP GSO). The UDP transport uses it
 * wherever it loads; TUNNEL_UDP_GSO=on requires it, `off` turns it off. Without it the transport uses
 * node:dgram, one system call and one callback per datagram.
 */
import { createRequire } from 'node:module';
import { TunnelError } from '../../errors.js';

/**
 * `datagrams`: 1-64, each `segmentSize` bytes but the last (shorter, not empty), 65,000 bytes at most
 * together; `address`: 4 bytes on an IPv4 socket, 16 on an IPv6 one; `dontFragment`: these leave with DF set
 * whatever the kernel knows of the path (IP_PMTUDISC_PROBE for this call). Bytes sent, or -errno.
 */
export type SendSegments = (
  fd: number,
  address: Uint8Array,
  port: number,
  segmentSize: number,
  datagrams: readonly Uint8Array[],
  dontFragment?: boolean,
) => number;

/** A read: one datagram (segmentSize = its length) or a run of segmentSize-byte datagrams, the last maybe shorter. */
export type OnRead = (run: Buffer, segmentSize: number, fromAddress: string, fromPort: number) => void;

export interface GsoSocketHandle {
  /** What close() takes. */
  readonly handle: unknown;
  /** The descriptor sendSegments sends on. */
  readonly fd: number;
  readonly port: number;
  readonly address: string;
}

export interface UdpGsoAddon {
  /** Binds a socket (address: 4 or 16 bytes; port 0 picks one); throws an Error with `code` (EADDRINUSE...). */
  open(address: Uint8Array, port: number, onRead: OnRead, onWritable: () => void): GsoSocketHandle;
  /** One onWritable() call once the socket takes data again (after a send came back with -EAGAIN). */
  waitWritable(handle: unknown): void;
  /** Stops reading at once; the descriptor closes on the loop's next turn. */
  close(handle: unknown): void;
  sendSegments: SendSegments;
}

/** Datagrams in one GSO send at most (the kernel's UDP_MAX_SEGMENTS). */
export const GSO_MAX_SEGMENTS = 64;
/** Bytes in one GSO send at most (an IPv4 datagram's 65,507 less some slack). */
export const GSO_MAX_BYTES = 65_000;

let addon: UdpGsoAddon | null | undefined;
/** Why the addon did not load (for the error when TUNNEL_UDP_GSO=on asks for it). */
let addonWhy = '';

function loadAddon(): UdpGsoAddon | null {
  if (addon === undefined) {
    try {
      const req = createRequire(import.meta.url);
      addon = req('@wg-relay-tunnel/udp-gso') as UdpGsoAddon;
    } catch (err) {
      addon = null;
      addonWhy = (err as { code?: string }).code ?? 'load failed';
    }
  }
  return addon;
}

/**
 * The addon as TUNNEL_UDP_GSO says: unset or empty, the addon where it loads, else null (node:dgram); `on`,
 * the addon (BAD_CONFIG where it does not load); `off`, null. Any other value is BAD_CONFIG naming it.
 */
export function udpGso(setting = process.env.TUNNEL_UDP_GSO): UdpGsoAddon | null {
  if (setting === 'off') return null;
  if (setting === undefined || setting === '') return loadAddon();
  if (setting !== 'on') {
    throw new TunnelError('BAD_CONFIG', `TUNNEL_UDP_GSO '${setting}' is not a setting; expected on or off`);
  }
  const loaded = loadAddon();
  if (loaded === null) {
    throw new TunnelError(
      'BAD_CONFIG',
      `TUNNEL_UDP_GSO 'on': the UDP GSO addon (native/udp-gso) does not load here (${addonWhy}); it needs Linux and a C compiler at npm ci`,
    );
  }
  return loaded;
}

/** What the UDP transport runs on, for start lines: `GSO/GRO` or `node:dgram` (BAD_CONFIG as udpGso()). */
export function udpSocketName(setting = process.env.TUNNEL_UDP_GSO): string {
  return udpGso(setting) ? 'GSO/GRO' : 'node:dgram';
}
