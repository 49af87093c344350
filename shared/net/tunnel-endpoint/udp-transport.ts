/**
 * The UDP transport of a tunnel endpoint: one socket (IPv4, or IPv6 when bound to an IPv6 address; a
 * socket bound to `::` also takes IPv4 as `::ffff:a.b.c.d`). Where the UDP GSO addon loads (udp-gso.ts; not
 * with TUNNEL_UDP_GSO=off) it is the addon's socket (gso-socket.ts: datagrams to one destination leave in
 * runs, one sendmsg per run, and arrive in runs, one read per run); otherwise a node:dgram socket
 * (datagram-socket.ts). Every datagram handed up is fresh or a view of a fresh buffer (never reused), so
 * receivers may keep it. Incoming datagrams are told apart by their first bytes: disco messages
 * (shared/net/disco/disco-codec.ts) to `onDisco`, anything else to `onWireGuard`; sent disco messages (path MTU
 * probes among them) leave with don't-fragment on the GSO socket. Sending never throws: `send`
 * is false when the socket is closed or backed up, and a send the kernel refuses is counted. A datagram
 * handed down from a buffer pool (shared/net/buffers/buffer-pool.ts) goes back to its pool once the kernel has its bytes.
 */
import { isDiscoMessage } from '../disco/disco-codec.js';
import type { DatagramSource } from '../wireguard/peer-host.js';
import { type DatagramEvents, type DatagramSocket, DgramSocket } from './datagram-socket.js';
import { GsoSocket, type GsoSocketStats } from './gso-socket.js';
import { type UdpGsoAddon, udpGso } from './udp-gso.js';

/** Datagrams waiting for the socket at most; `send` refuses more (the path is backed up). */
export const DEFAULT_MAX_QUEUED_SENDS = 1_024;

export interface UdpReceiver {
  /** A datagram that is not a disco message (WireGuard, or garbage for the device to count). */
  onWireGuard(datagram: Buffer, from: DatagramSource): void;
  /** A disco message; absent: dropped and counted as `discoUnhandled`. */
  onDisco?(message: Buffer, from: DatagramSource): void;
}

export interface UdpTransportStats {
  received: number;
  /** Datagrams that arrived while no receiver listened. */
  unclaimed: number;
  /** Disco messages that arrived while the receiver took none. */
  discoUnhandled: number;
  sent: number;
  /** Sends refused: closed socket or full send queue. */
  refused: number;
  /** Sends the socket reported failed after they were queued (and socket errors). */
  sendErrors: number;
}

export interface UdpTransportOptions {
  /** Local address to bind (IPv4 or IPv6 literal). */
  host: string;
  /** 0 picks an ephemeral port. */
  port: number;
  maxQueuedSends?: number;
  /** The GSO addon (default: udpGso(), the addon unless TUNNEL_UDP_GSO=off or it does not load); null: node:dgram. */
  gso?: UdpGsoAddon | null;
}

/** Where the socket's datagrams and send errors go: counted, then told apart for the receiver. */
class TransportEvents implements DatagramEvents {
  readonly stats: UdpTransportStats = {
    received: 0,
    unclaimed: 0,
    discoUnhandled: 0,
    sent: 0,
    refused: 0,
    sendErrors: 0,
  };
  receiver: UdpReceiver | null = null;

  onDatagram(datagram: Buffer, from: DatagramSource): void {
    this.stats.received++;
    const r = this.receiver;
    if (r === null) this.stats.unclaimed++;
    else if (!isDiscoMessage(datagram)) r.onWireGuard(datagram, from);
    else if (r.onDisco) r.onDisco(datagram, from);
    else this.stats.discoUnhandled++;
  }

  onSendErrors(count: number): void {
    this.stats.sendErrors += count;
  }
}

export class UdpTransport {
  readonly stats: UdpTransportStats;
  readonly #socket: DatagramSocket;
  readonly #events: TransportEvents;
  #closed = false;

  private constructor(socket: DatagramSocket, events: TransportEvents) {
    this.#socket = socket;
    this.#events = events;
    this.stats = events.stats;
  }

  /** Binds the socket. Rejects with the bind error (its `code`, e.g. EADDRINUSE) and leaves nothing open. */
  static async open(o: UdpTransportOptions): Promise<UdpTransport> {
    const events = new TransportEvents();
    const settings = {
      host: o.host,
      port: o.port,
      events,
      maxQueuedSends: o.maxQueuedSends ?? DEFAULT_MAX_QUEUED_SENDS,
    };
    const addon = o.gso === undefined ? udpGso() : o.gso;
    const socket = (addon && GsoSocket.open(addon, settings)) || (await DgramSocket.open(settings));
    return new UdpTransport(socket, events);
  }

  get port(): number {
    return this.#socket.port;
  }

  get address(): string {
    return this.#socket.address;
  }

  /**
   * Disco messages, path MTU probes among them, leave with don't-fragment set (the GSO socket), so a probe
   * larger than the path carries is lost, never fragmented: the MTU search need not stop at the first hop.
   */
  get dontFragment(): boolean {
    return this.#socket.dontFragment;
  }

  /** The GSO socket's counts of runs; null on a node:dgram socket (one system call per datagram). */
  get gso(): GsoSocketStats | null {
    return this.#socket instanceof GsoSocket ? this.#socket.gso : null;
  }

  /** Where datagrams go from now on (replaces the previous receiver; null: they are counted and dropped). */
  listen(receiver: UdpReceiver | null): void {
    this.#events.receiver = receiver;
  }

  /** Queues one datagram to host:port; false when closed or backed up (never throws for that). */
  send(datagram: Buffer, host: string, port: number): boolean {
    if (this.#closed || !this.#socket.send(datagram, host, port, isDiscoMessage(datagram))) {
      this.stats.refused++;
      return false;
    }
    this.stats.sent++;
    return true;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#events.receiver = null;
    await this.#socket.close();
  }
}
