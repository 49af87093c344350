/**
 * What the hub does with a WireGuard datagram from a known agent: transport data (type 4) goes to the
 * device at once; handshake messages (types 1-3) wait in the bounded handshake queue (handshake-queue.ts)
 * and are handled a batch per event-loop turn, so a burst of initiations does not hold the event loop in
 * one callback. A handshake message that waited a whole retry interval is dropped as stale.
 */
import type { Clock } from '../../../shared/clock.js';
import type { PeerPaths } from '../../../shared/net/tunnel-endpoint/peer-paths.js';
import { type Defer, HandshakeQueue } from './handshake-queue.js';

/**
 * A queued handshake message that is a view into a larger buffer is copied when that buffer exceeds this
 * (DERP payloads are views into the socket chunk that carried them, up to 64 KiB, never reused; holding
 * the view would pin the whole chunk while the message waits).
 */
export const HANDSHAKE_VIEW_MAX_BACKING = 8_192;

/** True for WireGuard handshake messages (initiation 1, response 2, cookie reply 3; type word LE). */
export function isHandshakeMessage(d: Buffer): boolean {
  if (d.length < 4) return false;
  const t = d.readUInt32LE(0);
  return t >= 1 && t <= 3;
}

export interface PacketIntakeOptions {
  clock: Clock;
  /** The hub endpoint's receive (never throws). */
  deliver(datagram: Buffer, from: PeerPaths): void;
  /** A handshake message queued this long ago or longer is stale (the device's rekeyTimeout). */
  staleAfterMs(): number;
  defer?: Defer;
  /** Handshake messages processed per turn (default HANDSHAKE_BATCH). */
  batch?: number;
  /** Handshake messages waiting at most (default HANDSHAKE_QUEUE_CAP). */
  cap?: number;
}

interface QueuedHandshake {
  readonly datagram: Buffer;
  readonly from: PeerPaths;
  /** clock.now() when queued. */
  readonly at: number;
}

export class PacketIntake {
  readonly #options: PacketIntakeOptions;
  readonly #queue: HandshakeQueue<QueuedHandshake>;
  readonly dropped = { handshakeQueueFull: 0, handshakeStale: 0 };

  constructor(opts: PacketIntakeOptions) {
    this.#options = opts;
    this.#queue = new HandshakeQueue<QueuedHandshake>({
      handle: (q) => {
        // Waited a whole retry interval: the initiator has sent a new initiation (new ephemeral key)
        // and would drop the response to this one, so answering it only costs the hub.
        if (opts.clock.now() - q.at >= opts.staleAfterMs()) this.dropped.handshakeStale++;
        else opts.deliver(q.datagram, q.from);
      },
      defer: opts.defer,
      batch: opts.batch,
      cap: opts.cap,
    });
  }

  /** Handshake messages waiting for their turn now. */
  get depth(): number {
    return this.#queue.depth;
  }

  /** Transport data to the device now; a handshake message to the queue (dropped and counted when full). */
  receive(datagram: Buffer, from: PeerPaths): void {
    if (!isHandshakeMessage(datagram)) {
      this.#options.deliver(datagram, from);
      return;
    }
    const held = datagram.buffer.byteLength > HANDSHAKE_VIEW_MAX_BACKING ? Buffer.from(datagram) : datagram;
    if (!this.#queue.push({ datagram: held, from, at: this.#options.clock.now() }))
      this.dropped.handshakeQueueFull++;
  }

  /** Drops what waits; later handshake messages are refused (counted as queue full). */
  close(): void {
    this.#queue.close();
  }
}
