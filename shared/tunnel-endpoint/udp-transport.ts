/**
 * The UDP transport of a tunnel endpoint: one node:dgram socket (IPv4, or IPv6 when bound to an IPv6
 * address; a socket bound to `::` also takes IPv4 as `::ffff:a.b.c.d`). Every datagram it reads is fresh
 * (dgram allocates one Buffer per message and never reuses it), so receivers may keep views into it.
 * Incoming datagrams are told apart by their first bytes: disco messages (shared/disco/disco-codec.ts) to
 * `onDisco`, anything else to `onWireGuard`. Sending never throws: `send` is false when the socket is
 * closed or its send queue is backed up, and a send the kernel refuses is counted. A datagram handed down
 * from a buffer pool (shared/buffer-pool.ts) goes back to its pool once the socket has sent it.
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { isHandedDown, releaseSent } from '../buffer-pool.js';
import { isDiscoMessage } from '../disco/disco-codec.js';
import type { DatagramSource } from '../wireguard/peer-host.js';

/** Datagrams waiting in the socket's send queue at most; `send` refuses more (the path is backed up). */
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
}

export class UdpTransport {
  readonly stats: UdpTransportStats = {
    received: 0,
    unclaimed: 0,
    discoUnhandled: 0,
    sent: 0,
    refused: 0,
    sendErrors: 0,
  };
  readonly #socket: Socket;
  readonly #maxQueued: number;
  #receiver: UdpReceiver | null = null;
  #closed = false;
  /** One completion callback for every send (no closure per datagram). */
  readonly #sent = (err: Error | null): void => {
    if (err) this.stats.sendErrors++;
  };

  /** The completion of a pooled datagram's send: the kernel has its bytes, the pool gets the buffer back. */
  #sentThenRelease(datagram: Buffer): (err: Error | null) => void {
    return (err) => {
      if (err) this.stats.sendErrors++;
      releaseSent(datagram);
    };
  }

  private constructor(socket: Socket, maxQueued: number) {
    this.#socket = socket;
    this.#maxQueued = maxQueued;
    socket.on('message', (msg, rinfo) => this.#receive(msg, rinfo));
    socket.on('error', () => {
      this.stats.sendErrors++;
    });
  }

  /** Binds the socket. Rejects with the bind error (its `code`, e.g. EADDRINUSE) and leaves nothing open. */
  static async open(o: UdpTransportOptions): Promise<UdpTransport> {
    const socket = createSocket({ type: isIPv6(o.host) ? 'udp6' : 'udp4' });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(o.port, o.host, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      socket.close();
      throw err;
    }
    return new UdpTransport(socket, o.maxQueuedSends ?? DEFAULT_MAX_QUEUED_SENDS);
  }

  get port(): number {
    return this.#socket.address().port;
  }

  get address(): string {
    return this.#socket.address().address;
  }

  /** Where datagrams go from now on (replaces the previous receiver; null: they are counted and dropped). */
  listen(receiver: UdpReceiver | null): void {
    this.#receiver = receiver;
  }

  /** Queues one datagram to host:port; false when closed or backed up (never throws for that). */
  send(datagram: Buffer, host: string, port: number): boolean {
    if (this.#closed || this.#socket.getSendQueueCount() >= this.#maxQueued) {
      this.stats.refused++;
      return false;
    }
    try {
      this.#socket.send(
        datagram,
        port,
        host,
        isHandedDown(datagram) ? this.#sentThenRelease(datagram) : this.#sent,
      );
    } catch {
      // A bad address or a socket closing under us: the datagram is dropped like any other loss.
      this.stats.refused++;
      return false;
    }
    this.stats.sent++;
    return true;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#receiver = null;
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #receive(msg: Buffer, from: DatagramSource): void {
    this.stats.received++;
    const r = this.#receiver;
    if (r === null) this.stats.unclaimed++;
    else if (!isDiscoMessage(msg)) r.onWireGuard(msg, from);
    else if (r.onDisco) r.onDisco(msg, from);
    else this.stats.discoUnhandled++;
  }
}
