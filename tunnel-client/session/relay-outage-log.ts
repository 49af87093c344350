/**
 * The agent's log lines about its relay connection: one when it is first up, one when it is lost, one when it is back
 * (with how long it was down and how many attempts it took), and nothing for each retry in between (the DERP client
 * backs off, shared/net/derp/backoff.ts; the last error stays in status.json), except one when the kind of failure
 * changes during an outage (its error code: the relay went from unreachable to refusing this key, say).
 */

import { DEFAULT_BACKOFF } from '../../shared/net/derp/backoff.js';
import type { DerpStateEvent } from '../../shared/net/derp/client-options.js';

const RETRY_NOTE = `retrying with backoff (at most ${DEFAULT_BACKOFF.maxMs / 1000}s apart)`;

export class RelayOutageLog {
  readonly #url: string;
  #everConnected = false;
  /** When the current outage began (clock ms), or null while connected or before the first attempt failed. */
  #downSince: number | null = null;
  #failedAttempts = 0;
  /** The error code last logged during this outage. */
  #loggedCode: string | null = null;

  constructor(url: string) {
    this.#url = url;
  }

  /** The line to log for this state change, or null for none. */
  note(e: DerpStateEvent, now: number): string | null {
    if (e.state === 'connected') return this.#connected(now);
    if (e.state !== 'reconnecting') return null;
    this.#failedAttempts++;
    const code = e.error?.code ?? 'CLOSED';
    const why = e.error
      ? ` (${e.error.code}: ${e.error.message})`
      : e.closeCode !== undefined
        ? ` (closed with code ${e.closeCode})`
        : '';
    if (this.#downSince !== null) {
      if (code === this.#loggedCode) return null;
      this.#loggedCode = code;
      return `relay connection still down, now${why}`;
    }
    this.#downSince = now;
    this.#loggedCode = code;
    if (!this.#everConnected) return `cannot reach the relay (${this.#url})${why}; ${RETRY_NOTE}`;
    return `relay connection lost${why}; ${RETRY_NOTE}`;
  }

  #connected(now: number): string {
    const down = this.#downSince;
    const attempts = this.#failedAttempts;
    const first = !this.#everConnected;
    this.#everConnected = true;
    this.#downSince = null;
    this.#failedAttempts = 0;
    this.#loggedCode = null;
    const after =
      down === null ? '' : ` after ${((now - down) / 1000).toFixed(1)}s and ${attempts} failed attempts`;
    if (first) return `relay connected (${this.#url})${after}; starting WireGuard handshake`;
    return `relay connection back${after}; starting WireGuard handshake`;
  }
}
