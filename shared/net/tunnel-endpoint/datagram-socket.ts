/**
 * The seam between the UDP transport (udp-transport.ts) and the socket under it: node:dgram (this file) or
 * the GSO/GRO addon's socket (gso-socket.ts). Either hands every datagram it reads up through `onDatagram`
 * in memory the receiver may keep (the receive rule, shared/net/buffers/received.ts), and `send` never throws: false means the datagram was not taken
 * (socket closed or backed up, or an address the socket cannot send to).
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Received } from '../buffers/received.js';
import { SendSink } from '../buffers/send-sink.js';
import type { DatagramSource } from '../wireguard/peer-host.js';

export interface DatagramSocket {
  readonly address: string;
  readonly port: number;
  /**
   * send's `dontFragment` is honoured: such a datagram leaves with DF set whatever the kernel knows of the
   * path, so one larger than the path carries is lost, never fragmented (path MTU probes).
   */
  readonly dontFragment: boolean;
  /** One datagram to host:port. A pooled datagram goes back to its pool once the kernel has its bytes. */
  send(datagram: Buffer, host: string, port: number, dontFragment: boolean): boolean;
  close(): Promise<void>;
}

export interface DatagramEvents {
  onDatagram(datagram: Received, from: DatagramSource): void;
  /** Sends the kernel refused after they were taken, and socket errors. */
  onSendErrors(count: number): void;
}

export interface DatagramSocketOptions {
  /** Local address to bind (IPv4 or IPv6 literal). */
  host: string;
  /** 0 picks an ephemeral port. */
  port: number;
  events: DatagramEvents;
}

/** node:dgram: one sendmsg and one completion per datagram; a send queue of at most `maxQueuedSends`. */
export class DgramSocket implements DatagramSocket {
  /** node:dgram cannot ask for it: a datagram larger than the path MTU the kernel knows is fragmented. */
  readonly dontFragment = false;
  readonly #socket: Socket;
  readonly #maxQueued: number;
  /**
   * The bottom of the socket's send path: its completions (one callback for every send, no closure per
   * datagram) count failed sends and give pooled datagrams back once the kernel has their bytes.
   */
  readonly #sink: SendSink<'send_error'>;

  private constructor(socket: Socket, events: DatagramEvents, maxQueued: number) {
    this.#socket = socket;
    this.#maxQueued = maxQueued;
    this.#sink = new SendSink<'send_error'>({
      counter: { drop: () => events.onSendErrors(1) },
      onWritten: (err) => err && events.onSendErrors(1),
    });
    socket.on('message', (msg, rinfo) => events.onDatagram(msg, rinfo));
    socket.on('error', () => events.onSendErrors(1));
  }

  /** Binds the socket. Rejects with the bind error (its `code`, e.g. EADDRINUSE) and leaves nothing open. */
  static async open(o: DatagramSocketOptions & { maxQueuedSends: number }): Promise<DgramSocket> {
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
    return new DgramSocket(socket, o.events, o.maxQueuedSends);
  }

  get address(): string {
    return this.#socket.address().address;
  }

  get port(): number {
    return this.#socket.address().port;
  }

  send(datagram: Buffer, host: string, port: number, _dontFragment: boolean): boolean {
    if (this.#socket.getSendQueueCount() >= this.#maxQueued) return false;
    try {
      this.#socket.send(datagram, port, host, this.#sink.completion(datagram));
    } catch {
      // A bad address or a socket closing under us: the datagram is dropped like any other loss.
      return false;
    }
    return true;
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }
}
