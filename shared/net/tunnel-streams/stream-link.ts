/**
 * One reliable session between two tunnel addresses: an ArqSession carrying a MuxSession, whose
 * datagrams travel as inner IPv4/UDP packets (inner-udp.ts). One StreamLink is one session
 * incarnation: when its ARQ or mux closes, the link is done and the binding makes a new one.
 *
 * Roles (docs/PROTOCOL.md): the hub is mux 'client' (opens streams) and picks a random conv
 * for each incarnation; the agent is 'server' and adopts whatever conv the hub uses (the binding
 * replaces its link when the conv changes). Only the side with a taker for inbound streams accepts them
 * (`acceptStreams`): a stream nothing would read is reset at once, so its window is never buffered.
 */
import { EventEmitter } from 'node:events';
import type { Clock } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import type { ArqOptions } from '../arq/arq-options.js';
import { type ArqPoolOptions, ArqSession } from '../arq/arq-session.js';
import type { PacketRoom } from '../buffers/packet-room.js';
import type { MuxSession } from '../mux/mux-session.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { type MuxBindingOptions, muxOverArq } from '../mux/transport.js';
import { STREAM_PATH_TUNING, type StreamPath, type StreamPathKind } from './constants.js';
import { streamDatagramRoom, wrapStreamDatagram } from './inner-udp.js';

/**
 * ARQ tuning a binding may pass through (everything but what the link decides, by itself or by the path),
 * and where its buffers come from.
 */
export type LinkArqOptions = Partial<
  Omit<
    ArqOptions,
    'conv' | 'mtu' | 'clock' | 'output' | 'defer' | 'ackEvery' | 'ackDelayMs' | 'queueTargetMs'
  >
> &
  ArqPoolOptions;
export type LinkMuxOptions = Partial<Omit<MuxBindingOptions, 'role' | 'clock' | 'acceptStreams'>>;

export interface StreamLinkOptions {
  role: 'client' | 'server';
  conv: number;
  /** Local and remote tunnel addresses (u32). */
  local: number;
  remote: number;
  port: number;
  /** What the layers below the inner packet allow towards the peer (largest inner packet, room). */
  room: PacketRoom;
  /** The kind of path the datagrams take at first (its STREAM_PATH_TUNING); setPath() follows a switch. */
  kind: StreamPathKind;
  /**
   * Whether the peer may open streams on this link ('stream' events); false resets each at once (RST_PROTOCOL,
   * counted in the mux's refused.protocolViolation).
   */
  acceptStreams: boolean;
  clock: Clock;
  /** Sends one inner IP packet (the link does not touch it afterwards); false when it was dropped. */
  send(packet: Buffer): boolean;
  defer?: (fn: () => void) => void;
  arq?: LinkArqOptions;
  mux?: LinkMuxOptions;
}

export class StreamLink extends EventEmitter {
  readonly arq: ArqSession;
  readonly mux: MuxSession;
  readonly remote: number;
  /** Inner packets the layer below dropped at once (send returned false). */
  sendErrors = 0;
  #closed = false;

  constructor(o: StreamLinkOptions) {
    super();
    this.remote = o.remote;
    const room = streamDatagramRoom(o.room);
    const tuning = STREAM_PATH_TUNING[o.kind];
    this.arq = new ArqSession({
      ...o.arq,
      ...tuning.ack,
      queueTargetMs: tuning.queueTargetMs,
      conv: o.conv,
      mtu: room.mtu,
      clock: o.clock,
      defer: o.defer ?? setImmediate,
      // Room for the headers below the ARQ: each layer writes in place (one buffer per datagram).
      headroom: room.headroom,
      tailroom: room.tailroom,
      output: (d) => {
        if (!o.send(wrapStreamDatagram(o.local, o.remote, d, o.port))) this.sendErrors++;
      },
    });
    this.mux = muxOverArq(this.arq, {
      ...o.mux,
      role: o.role,
      clock: o.clock,
      acceptStreams: o.acceptStreams,
    });
    this.mux.on('stream', (s: MuxStream) => this.emit('stream', s));
    this.mux.on('close', (err?: TunnelError) => this.#done(err));
    this.arq.on('close', (err?: TunnelError) => {
      // The mux follows through transportClosed; make sure the link is reported once either way.
      if (!this.mux.closed) this.mux.close(err);
      this.#done(err);
    });
  }

  get conv(): number {
    return this.arq.conv;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Hands one ARQ datagram (owned by the link from now on) to the session. */
  input(datagram: Buffer): void {
    if (!this.#closed) this.arq.input(datagram);
  }

  /**
   * The peer's path changed (or its MTU did): the session sizes new segments to it (splitting those in flight
   * if it shrank) and acknowledges and caps its flight by its kind's tuning from now on.
   */
  setPath(path: StreamPath): void {
    if (this.#closed) return;
    const tuning = STREAM_PATH_TUNING[path.kind];
    this.arq.setMtu(streamDatagramRoom({ mtu: path.mtu, headroom: 0, tailroom: 0 }).mtu);
    this.arq.setAckPolicy(tuning.ack);
    this.arq.setQueueTarget(tuning.queueTargetMs);
  }

  /** Closes the session; its streams (and pending opens) fail with `err`. */
  close(err = new TunnelError('CLOSED', 'stream session closed')): void {
    if (this.#closed) return;
    this.mux.close(err);
    if (!this.arq.closed) this.arq.close(err);
    this.#done(err);
  }

  #done(err?: TunnelError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close', err);
  }
}
