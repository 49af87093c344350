/**
 * TLS sessions of the agent's upstream dials, kept for resumption: a request through the path proxy opens a new
 * upstream connection, and against an https API server each would otherwise pay a full handshake. One session per
 * upstream (address and server name), the newest kept; at most `maxEntries` upstreams (the oldest one dropped).
 * A session is only ever offered to the upstream it came from, with the same trust options (one cache per dialer).
 */
import type tls from 'node:tls';

export const DEFAULT_TLS_SESSIONS = 64;

export class TlsSessionCache {
  readonly #sessions = new Map<string, Buffer>();
  readonly #maxEntries: number;

  constructor(maxEntries = DEFAULT_TLS_SESSIONS) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** The session to offer when connecting to `key`, if one was kept. */
  get(key: string): Buffer | undefined {
    return this.#sessions.get(key);
  }

  /** Keeps the sessions `socket` receives (TLS 1.3 sends them after the handshake) for later dials to `key`. */
  keepFrom(key: string, socket: tls.TLSSocket): void {
    socket.on('session', (session: Buffer) => {
      this.#sessions.delete(key);
      if (this.#sessions.size >= this.#maxEntries) {
        const oldest = this.#sessions.keys().next().value;
        if (oldest !== undefined) this.#sessions.delete(oldest);
      }
      this.#sessions.set(key, session);
    });
  }

  /** Forgets `key`'s session (a dial that failed with it should not offer it again). */
  forget(key: string): void {
    this.#sessions.delete(key);
  }
}
