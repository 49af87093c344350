/**
 * The UDP GSO addon's socket (udp-gso.ts) behind the DatagramSocket seam: reads come as runs (UDP GRO) and
 * are handed up one datagram at a time as views of the run's fresh buffer, inside one receive run
 * (arq/receive-run.ts: the ARQ sessions they reach flush once, at the run's end); sends go out in runs
 * (gso-batch.ts). Only for an address literal: open() gives null for anything else (node:dgram resolves
 * names) and the transport falls back to node:dgram.
 */
import { isIPv6 } from 'node:net';
import { receiveRun } from '../arq/receive-run.js';
import { ipToSocketBytes } from '../ip/ip-bytes.js';
import type { DatagramEvents, DatagramSocket, DatagramSocketOptions } from './datagram-socket.js';
import { GsoBatch, type GsoBatchStats } from './gso-batch.js';
import type { GsoSocketHandle, UdpGsoAddon } from './udp-gso.js';

export interface GsoSocketStats extends GsoBatchStats {
  /** Reads from the socket. */
  reads: number;
  /** Reads that returned a run of more than one datagram (UDP GRO). */
  runReads: number;
}

export class GsoSocket implements DatagramSocket {
  readonly address: string;
  readonly port: number;
  readonly dontFragment = true;
  readonly #addon: UdpGsoAddon;
  readonly #handle: GsoSocketHandle;
  readonly #batch: GsoBatch;
  readonly #reads = { reads: 0, runReads: 0 };
  #closed = false;

  private constructor(
    addon: UdpGsoAddon,
    o: DatagramSocketOptions & { maxQueuedSends: number },
    bind: Uint8Array,
  ) {
    this.#addon = addon;
    const events = o.events;
    const reads = this.#reads;
    this.#handle = addon.open(
      bind,
      o.port,
      (run, segmentSize, address, port) => {
        reads.reads++;
        if (segmentSize < run.length) reads.runReads++;
        readRun(events, run, segmentSize, { address, port });
      },
      () => this.#batch.writable(),
    );
    this.address = this.#handle.address;
    this.port = this.#handle.port;
    this.#batch = new GsoBatch({
      fd: this.#handle.fd,
      family: bind.length === 16 ? 6 : 4,
      sendSegments: addon.sendSegments,
      maxQueued: o.maxQueuedSends,
      waitWritable: () => addon.waitWritable(this.#handle.handle),
      onSendErrors: (count) => events.onSendErrors(count),
    });
  }

  /**
   * Binds a socket on host:port; null when host is not an address literal. Throws the bind error (with its
   * `code`, e.g. EADDRINUSE) and leaves nothing open.
   */
  static open(addon: UdpGsoAddon, o: DatagramSocketOptions & { maxQueuedSends: number }): GsoSocket | null {
    const bind = ipToSocketBytes(o.host, isIPv6(o.host) ? 6 : 4);
    return bind === null ? null : new GsoSocket(addon, o, bind);
  }

  get gso(): GsoSocketStats {
    return { ...this.#batch.stats, ...this.#reads };
  }

  send(datagram: Buffer, host: string, port: number, dontFragment: boolean): boolean {
    return !this.#closed && this.#batch.send(datagram, host, port, dontFragment);
  }

  /**
   * Sends the open run, drops what waits for the socket, and closes it. Resolves once the descriptor is
   * closed: the addon closes it among the loop's closing handles, which run before the next turn's timers.
   */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#batch.flush();
      this.#batch.discard();
      this.#addon.close(this.#handle.handle);
    }
    return new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** One read: a datagram, or a run of segmentSize-byte datagrams (the last maybe shorter) from one sender. */
function readRun(
  events: DatagramEvents,
  run: Buffer,
  segmentSize: number,
  from: { address: string; port: number },
): void {
  if (segmentSize >= run.length) {
    events.onDatagram(run, from);
    return;
  }
  receiveRun.within(() => {
    for (let at = 0; at < run.length; at += segmentSize) {
      events.onDatagram(run.subarray(at, Math.min(at + segmentSize, run.length)), from);
    }
  });
}
