/**
 * TLS sessions kept for resumption, one per key (a peer and the trust it was checked with), the newest kept: a
 * client that dials the same server again offers it, and both sides skip a full handshake. At most `maxEntries`
 * keys; the oldest is dropped first. The caller decides which sessions are worth keeping (only those of a
 * connection it trusted) and keys them so a session is offered only to the server, and under the trust, it came from.
 */
export class TlsSessionCache {
  readonly #sessions = new Map<string, Buffer>();
  readonly #maxEntries: number;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** The session to offer when connecting to `key`, if one was kept. */
  get(key: string): Buffer | undefined {
    return this.#sessions.get(key);
  }

  /** Keeps `session` (a TLSSocket's 'session' event) for the next connection to `key`. */
  keep(key: string, session: Buffer): void {
    this.#sessions.delete(key);
    if (this.#sessions.size >= this.#maxEntries) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.#sessions.delete(oldest);
    }
    this.#sessions.set(key, session);
  }

  /** Forgets `key`'s session (a connection that failed with it should not offer it again). */
  forget(key: string): void {
    this.#sessions.delete(key);
  }
}
