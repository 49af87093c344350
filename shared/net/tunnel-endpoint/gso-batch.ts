/**
 * The send side of the GSO socket (gso-socket.ts): runs of datagrams to one destination, each sent with
 * one sendmsg(2) through UDP GSO (udp-gso.ts). A run ends at the end of the current JavaScript job (a
 * microtask), at 64 datagrams or 65,000 bytes, at a datagram for another destination, and after a datagram
 * shorter than the run's first (GSO cuts a run at its first datagram's size: only the last may be shorter).
 * A burst of the stream layer's full-size datagrams so leaves in a few system calls.
 *
 * The kernel copies the bytes before sendmsg returns, so pooled buffers go back to their pool right after
 * the send, through the batch's SendSink (shared/net/buffers/send-sink.ts). A full socket buffer (EAGAIN, ENOBUFS) keeps the run, in order, until
 * the socket is writable again; while `maxQueued` datagrams wait, send() refuses more (the path is backed
 * up, as node:dgram's send queue). A route that cannot take GSO (EIO, EINVAL: no checksum offload on the
 * device) gets every datagram in a send of its own from then on. Any other error (a firewall's EPERM, no
 * route, EMSGSIZE for a don't-fragment datagram larger than the interface) drops the run like any other loss
 * and counts it through `onSendErrors`. A datagram sent with `dontFragment` (a path MTU probe) is a run of
 * its own, sent with DF set (udp-gso.ts).
 */
import { constants } from 'node:os';
import { RingQueue } from '../buffers/ring-queue.js';
import { SendSink } from '../buffers/send-sink.js';
import { ipToSocketBytes } from '../ip/ip-bytes.js';
import { GSO_MAX_BYTES, GSO_MAX_SEGMENTS, type SendSegments } from './udp-gso.js';

const { EAGAIN, ENOBUFS, EIO, EINVAL } = constants.errno;

export interface GsoBatchOptions {
  /** The socket's descriptor. */
  fd: number;
  /** The socket's family: on an IPv6 socket IPv4 destinations go as ::ffff:a.b.c.d. */
  family: 4 | 6;
  sendSegments: SendSegments;
  /** Datagrams that may wait for the socket to become writable. */
  maxQueued: number;
  /** Asks for one writable() call once the socket takes data again. */
  waitWritable(): void;
  /** `count` datagrams the kernel refused; they are dropped. */
  onSendErrors(count: number): void;
}

export interface GsoBatchStats {
  /** sendmsg calls that sent a run. */
  sends: number;
  /** Datagrams those runs held. */
  datagrams: number;
  /** Runs that found the socket's buffer full and waited for it (or behind one that did). */
  waited: number;
  /** True once the route refused GSO: one datagram per send from then on. */
  off: boolean;
}

/** Why a datagram taken by the batch never left: the kernel refused its send, or the socket closed first. */
type GsoDropReason = 'send_error' | 'closing';

interface Run {
  datagrams: Buffer[];
  /** Sent with DF whatever the kernel knows of the path (a run of one: probes). */
  dontFragment: boolean;
  bytes: number;
  segmentSize: number;
  address: Uint8Array;
  port: number;
}

export class GsoBatch {
  readonly stats: GsoBatchStats = { sends: 0, datagrams: 0, waited: 0, off: false };
  readonly #options: GsoBatchOptions;
  /** The run being built (empty between runs). */
  #run: Run | null = null;
  /** The run's last datagram was shorter than its first: nothing may follow it. */
  #runClosed = false;
  #runHost = '';
  /** Runs that found the socket full, in order; bounded by send()'s check of #waitingDatagrams. */
  readonly #waiting = new RingQueue<Run>({ capacity: Number.POSITIVE_INFINITY });
  /** The one-datagram array of a send without GSO (reused). */
  readonly #single: Buffer[] = [];
  #waitingDatagrams = 0;
  #askedWritable = false;
  /** Destination bytes for #addressOf (kept across runs: a path sends to one address). */
  #address: Uint8Array | null = null;
  #addressOf = '';
  #flushQueued = false;
  /** Gives pooled datagrams back once sent, refused by the kernel (counted: onSendErrors) or discarded. */
  readonly #sink: SendSink<GsoDropReason>;
  readonly #flushTask = (): void => {
    this.#flushQueued = false;
    this.flush();
  };

  constructor(options: GsoBatchOptions) {
    this.#options = options;
    this.#sink = new SendSink<GsoDropReason>({
      counter: { drop: (reason) => reason === 'send_error' && options.onSendErrors(1) },
    });
  }

  /** Datagrams waiting for the socket to become writable. */
  get waiting(): number {
    return this.#waitingDatagrams;
  }

  /**
   * Adds one datagram to the run to host:port; false when it is not taken: datagrams wait for the socket
   * already, it is empty or longer than one send takes, or host is not an address of the socket's family.
   */
  send(datagram: Buffer, host: string, port: number, dontFragment = false): boolean {
    const length = datagram.length;
    if (this.#waitingDatagrams >= this.#options.maxQueued || length === 0 || length > GSO_MAX_BYTES)
      return false;
    const run = this.#run;
    if (run !== null && (dontFragment || !this.#fits(run, length, host, port))) this.flush();
    if (this.#run === null) {
      const address = this.#destination(host);
      if (address === null) return false;
      this.#run = { datagrams: [], dontFragment, bytes: 0, segmentSize: length, address, port };
      this.#runHost = host;
    }
    const open = this.#run;
    open.datagrams.push(datagram);
    open.bytes += length;
    if (length < open.segmentSize || dontFragment) this.#runClosed = true;
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(this.#flushTask);
    }
    return true;
  }

  /** Sends the open run now (the socket calls this before it closes). */
  flush(): void {
    const run = this.#run;
    if (run === null) return;
    this.#run = null;
    this.#runClosed = false;
    if (this.#waiting.length > 0 || !this.#transmit(run)) this.#wait(run);
  }

  /** The socket takes data again: the waiting runs go, in order, until it is full again. */
  writable(): void {
    this.#askedWritable = false;
    for (let run = this.#waiting.peek(); run !== undefined; run = this.#waiting.peek()) {
      const count = run.datagrams.length;
      const done = this.#transmit(run);
      this.#waitingDatagrams -= count - (done ? 0 : run.datagrams.length);
      if (!done) {
        this.#askWritable();
        return;
      }
      this.#waiting.shift();
    }
  }

  /** Gives every waiting and unsent pooled datagram back (the socket is closing). */
  discard(): void {
    const run = this.#run;
    this.#run = null;
    const sink = this.#sink;
    if (run !== null) for (const datagram of run.datagrams) sink.drop('closing', datagram);
    for (let w = this.#waiting.shift(); w !== undefined; w = this.#waiting.shift()) {
      for (const datagram of w.datagrams) sink.drop('closing', datagram);
    }
    this.#waitingDatagrams = 0;
  }

  #fits(run: Run, length: number, host: string, port: number): boolean {
    return (
      host === this.#runHost &&
      port === run.port &&
      !this.#runClosed &&
      !this.stats.off &&
      length <= run.segmentSize &&
      run.datagrams.length < GSO_MAX_SEGMENTS &&
      run.bytes + length <= GSO_MAX_BYTES
    );
  }

  /** Sends one run; false when the socket is full (the run then holds the datagrams not sent). */
  #transmit(run: Run): boolean {
    const count = run.datagrams.length;
    if (this.stats.off || count === 1) return this.#transmitEach(run);
    const o = this.#options;
    const result = o.sendSegments(
      o.fd,
      run.address,
      run.port,
      run.segmentSize,
      run.datagrams,
      run.dontFragment,
    );
    if (result === -EAGAIN || result === -ENOBUFS) return false;
    if (result === -EIO || result === -EINVAL) {
      this.stats.off = true;
      return this.#transmitEach(run);
    }
    const sink = this.#sink;
    if (result >= 0) {
      this.stats.sends++;
      this.stats.datagrams += count;
      for (const datagram of run.datagrams) sink.sent(datagram);
    } else {
      for (const datagram of run.datagrams) sink.drop('send_error', datagram);
    }
    return true;
  }

  /** The run's datagrams one per send; false when the socket filled up (the run keeps the rest). */
  #transmitEach(run: Run): boolean {
    const o = this.#options;
    const single = this.#single;
    for (let i = 0; i < run.datagrams.length; i++) {
      const datagram = run.datagrams[i] as Buffer;
      single[0] = datagram;
      const result = o.sendSegments(o.fd, run.address, run.port, datagram.length, single, run.dontFragment);
      single.length = 0;
      if (result === -EAGAIN || result === -ENOBUFS) {
        run.datagrams.splice(0, i);
        return false;
      }
      if (result >= 0) {
        this.stats.sends++;
        this.stats.datagrams++;
        this.#sink.sent(datagram);
      } else {
        this.#sink.drop('send_error', datagram);
      }
    }
    return true;
  }

  #wait(run: Run): void {
    this.stats.waited++;
    this.#waiting.push(run);
    this.#waitingDatagrams += run.datagrams.length;
    this.#askWritable();
  }

  #askWritable(): void {
    if (this.#askedWritable) return;
    this.#askedWritable = true;
    this.#options.waitWritable();
  }

  /** The destination's bytes for the socket's family, or null when host is not such an address. */
  #destination(host: string): Uint8Array | null {
    if (host === this.#addressOf && this.#address !== null) return this.#address;
    const address = ipToSocketBytes(host, this.#options.family);
    if (address === null) return null;
    this.#address = address;
    this.#addressOf = host;
    return address;
  }
}
