/**
 * Batches the writes of one event-loop turn into one socket write: the first write of a turn corks the
 * socket and a nextTick uncorks it. A relay forwarding a burst of frames then produces one TLS record
 * (up to 16 KiB) and one syscall instead of one per frame; ws's own per-frame cork/uncork nests inside
 * (Node counts corks), and each WebSocket message still carries exactly one DERP frame.
 */
import type { Duplex } from 'node:stream';

export class WriteBatcher {
  readonly #socket: Duplex;
  #corked = false;
  readonly #uncork = (): void => {
    this.#corked = false;
    this.#socket.uncork();
  };

  constructor(socket: Duplex) {
    this.#socket = socket;
  }

  /** Call before each write of a burst. */
  hold(): void {
    if (this.#corked) return;
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(this.#uncork);
  }
}
