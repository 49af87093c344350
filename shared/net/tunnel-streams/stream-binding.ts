/**
 * The stream session of one tunnel endpoint: inner IPv4/UDP packets on STREAMS_PORT <-> one StreamLink
 * per peer (remote tunnel address). Feed every inner packet the WireGuard device delivers to
 * `input()`; the binding sends inner packets through `send()`.
 *
 * - client (hub): `open(remote, target)` uses the link to that peer or starts one with a fresh random
 *   conv. Datagrams whose conv is not the live link's are dropped (`stale`): after a hub restart the
 *   agent's old session hears nothing until the hub opens a stream with its new conv.
 * - server (agent): a datagram from an accepted peer with a new conv (first one, or the hub restarted)
 *   replaces the link; inbound streams go to `onStream`.
 * Only a server with `onStream` accepts inbound streams. A stream the peer opens anywhere else (the agent
 * opening one to the hub, or a server with no taker) is reset at once with RST_PROTOCOL and counted in the
 * mux's refused.protocolViolation: nothing would read it, so none of its window is ever buffered.
 * Links are removed when their session closes. Caps: `maxLinks` peers (excess counted `linkLimit`).
 */
import { randomInt } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import { peekConv } from '../arq/segment.js';
import type { PacketRoom } from '../buffers/packet-room.js';
import type { Received } from '../buffers/received.js';
import { IPV4_MAX_PACKET } from '../ip/ipv4.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { openTarget } from '../mux/open-target.js';
import { STREAMS_PORT, type StreamPath, type StreamPathKind } from './constants.js';
import { type InnerDropReason, pickStreamDatagram } from './inner-udp.js';
import { addLinkTotals, type LinkTotals, newLinkTotals, sumLinkTotals } from './link-totals.js';
import { type LinkArqOptions, type LinkMuxOptions, StreamLink } from './stream-link.js';

export const DEFAULT_MAX_LINKS = 1024;
/** openTarget(): how long the agent may take to answer (it dials with its own 10 s timeout). */
export const DEFAULT_OPEN_TIMEOUT_MS = 15_000;
/** No layer below: inner packets up to the IPv4 maximum, no room to reserve. */
export const NOTHING_BELOW: PacketRoom = { mtu: IPV4_MAX_PACKET, headroom: 0, tailroom: 0 };

export interface StreamBindingOptions {
  role: 'client' | 'server';
  /** This endpoint's tunnel address (u32). */
  local: number;
  clock: Clock;
  /** Sends one inner IP packet; false when it was dropped (counted as the link's sendErrors). */
  send(packet: Buffer): boolean;
  /**
   * What the layers below allow towards a peer: the largest inner packet and the room to grant around
   * it (the tunnel endpoint answers for its WireGuard and the peer's path). Consulted when a link
   * starts. Default NOTHING_BELOW (bindings joined back to back in memory).
   */
  roomFor?: (remote: number) => PacketRoom;
  /** The kind of path towards a peer, consulted when a link starts (its ACK policy). Default 'relayed'. */
  kindFor?: (remote: number) => StreamPathKind;
  /**
   * The link to `remote` has data in flight and heard nothing from the peer for half a retransmission timeout
   * (its ARQ's 'silent'): the path below may have died. Called before that timeout's resends go out.
   */
  onSilent?: (remote: number) => void;
  /** server: whether datagrams from `remote` may start a session (default: any). */
  accept?: (remote: number) => boolean;
  /** server: a new inbound stream, which the handler owns (reads it or ends it). Absent: inbound streams are refused. */
  onStream?: (stream: MuxStream, remote: number) => void;
  port?: number;
  maxLinks?: number;
  arq?: LinkArqOptions;
  mux?: LinkMuxOptions;
  defer?: (fn: () => void) => void;
  random?: () => number;
}

export interface StreamBindingStats {
  datagramsIn: number;
  linksStarted: number;
  linksReplaced: number;
  dropped: Record<InnerDropReason | 'stale' | 'notAccepted' | 'linkLimit' | 'closed', number>;
}

export class StreamBinding {
  readonly stats: StreamBindingStats = {
    datagramsIn: 0,
    linksStarted: 0,
    linksReplaced: 0,
    dropped: {
      'not-ipv4-udp': 0,
      'wrong-port': 0,
      'wrong-address': 0,
      malformed: 0,
      stale: 0,
      notAccepted: 0,
      linkLimit: 0,
      closed: 0,
    },
  };
  readonly #options: StreamBindingOptions;
  readonly #links = new Map<number, StreamLink>();
  /** Counters of the links that closed (see linkTotals()). */
  readonly #closedTotals = newLinkTotals();
  readonly #port: number;
  readonly #max: number;
  #closed = false;

  constructor(o: StreamBindingOptions) {
    this.#options = o;
    this.#port = o.port ?? STREAMS_PORT;
    this.#max = o.maxLinks ?? DEFAULT_MAX_LINKS;
  }

  get linkCount(): number {
    return this.#links.size;
  }

  link(remote: number): StreamLink | undefined {
    return this.#links.get(remote);
  }

  /** Open streams over all live links. */
  get streamCount(): number {
    let n = 0;
    for (const l of this.#links.values()) n += l.mux.streamCount;
    return n;
  }

  /** ARQ and mux counters summed over every link this binding had (never decrease). */
  linkTotals(): LinkTotals {
    return sumLinkTotals(this.#closedTotals, this.#links.values());
  }

  /**
   * Feeds one decrypted inner IP packet, owned under the receive rule (shared/net/buffers/received.ts):
   * the ARQ keeps views into it, no copy. Returns false when it is not a stream datagram (the caller may
   * handle it otherwise).
   */
  input(packet: Received): boolean {
    const d = pickStreamDatagram(packet, this.#options.local, this.#port);
    if (typeof d === 'string') {
      this.stats.dropped[d]++;
      return false;
    }
    this.stats.datagramsIn++;
    if (this.#closed) return this.#drop('closed');
    const conv = peekConv(d.payload);
    if (conv === undefined) return this.#drop('malformed');
    let link = this.#links.get(d.src);
    if (this.#options.role === 'client') {
      if (!link || link.conv !== conv) return this.#drop('stale');
    } else if (!link || link.conv !== conv) {
      if (this.#options.accept && !this.#options.accept(d.src)) return this.#drop('notAccepted');
      if (link) {
        this.stats.linksReplaced++;
        link.close(new TunnelError('CLOSED', 'the peer started a new session'));
      }
      link = this.#start(d.src, conv);
      if (!link) return true;
    }
    // Straight to the link's ARQ (it keeps views until the data are read: the receive rule).
    if (!link.closed) link.arq.input(d.payload);
    return true;
  }

  /** client: a stream to `target` on `remote` (with `first` bytes sent along), through its live link or a new one. */
  async open(
    remote: number,
    target: string,
    opts: { timeoutMs?: number; first?: Buffer } = {},
  ): Promise<MuxStream> {
    if (this.#closed) throw new TunnelError('CLOSED', 'stream binding is closed');
    let link = this.#links.get(remote);
    if (!link || link.closed || link.mux.closed) {
      link?.close();
      link = this.#start(remote, this.#newConv());
      if (!link) throw new TunnelError('LIMIT_EXCEEDED', `stream links: ${this.#max} peers already`);
    }
    const timeoutMs = opts.timeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS;
    return openTarget(link.mux, target, { clock: this.#options.clock, timeoutMs, first: opts.first });
  }

  /** The path towards a peer changed (its kind or its MTU): its live link follows. */
  setPath(remote: number, path: StreamPath): void {
    this.#links.get(remote)?.setPath(path);
  }

  /** Ends the session with a peer (agent removed). */
  drop(remote: number, err = new TunnelError('CLOSED', 'stream session dropped')): void {
    this.#links.get(remote)?.close(err);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const l of [...this.#links.values()]) l.close(new TunnelError('CLOSED', 'stream binding closed'));
    this.#links.clear();
  }

  #drop(reason: keyof StreamBindingStats['dropped']): true {
    this.stats.dropped[reason]++;
    return true;
  }

  #newConv(): number {
    const r = this.#options.random;
    return r ? Math.floor(r() * 0xffffffff) >>> 0 : randomInt(1, 0xffffffff);
  }

  #start(remote: number, conv: number): StreamLink | undefined {
    if (this.#links.size >= this.#max && !this.#links.has(remote)) {
      this.stats.dropped.linkLimit++;
      return undefined;
    }
    const o = this.#options;
    const link = new StreamLink({
      role: o.role,
      conv,
      local: o.local,
      remote,
      port: this.#port,
      room: o.roomFor?.(remote) ?? NOTHING_BELOW,
      kind: o.kindFor?.(remote) ?? 'relayed',
      acceptStreams: o.role === 'server' && o.onStream !== undefined,
      clock: o.clock,
      send: o.send,
      defer: o.defer,
      arq: o.arq,
      mux: o.mux,
    });
    this.#links.set(remote, link);
    this.stats.linksStarted++;
    const onSilent = o.onSilent;
    if (onSilent) link.arq.on('silent', () => onSilent(remote));
    link.on('close', () => {
      if (this.#links.get(remote) === link) this.#links.delete(remote);
      addLinkTotals(this.#closedTotals, link);
    });
    const onStream = o.role === 'server' ? o.onStream : undefined;
    if (onStream) link.on('stream', (s: MuxStream) => onStream(s, remote));
    return link;
  }
}
