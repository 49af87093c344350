/**
 * A flood of `/derp` WebSocket upgrades that never send ClientInfo: each is a real TLS connection (resuming one
 * TLS session, so the flood costs the relay about what an attacker's would; plain TCP for a `--plain-http` relay)
 * from a chosen loopback source address,
 * sends the upgrade request and then stays silent. The HTTP status of each answer is kept, and whether the relay
 * has cut the socket since.
 */
import { connect as connectTcp, type Socket } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';

export interface PendingUpgrade {
  readonly source: string;
  /** HTTP status of the upgrade answer (101 when the relay took it), or 0 when the socket failed first. */
  readonly status: number;
  /** True once the relay closed or cut the socket. */
  readonly closed: () => boolean;
}

export interface FloodTarget {
  readonly host: string;
  readonly port: number;
  /** False for a relay serving plain HTTP (`serve --plain-http`). */
  readonly tls: boolean;
}

const ANSWER_TIMEOUT_MS = 10_000;
const IN_FLIGHT = 128;

const UPGRADE_REQUEST =
  'GET /derp HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: derp\r\n\r\n';

/** Holds every socket the flood opened, so a test can end them all. */
export class UpgradeFlood {
  readonly #target: FloodTarget;
  readonly #sockets = new Set<Socket>();
  #session: Buffer | undefined;

  constructor(target: FloodTarget) {
    this.#target = target;
  }

  /** Opens one pending upgrade per entry of `sources` (at most IN_FLIGHT at a time), in order. */
  async open(sources: readonly string[]): Promise<PendingUpgrade[]> {
    const out = new Array<PendingUpgrade>(sources.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < sources.length) {
        const i = next++;
        out[i] = await this.#one(sources[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, sources.length) }, worker));
    return out;
  }

  #one(source: string): Promise<PendingUpgrade> {
    const tcp = connectTcp({ host: this.#target.host, port: this.#target.port, localAddress: source });
    tcp.on('error', () => {});
    const socket = this.#target.tls ? this.#secure(tcp) : tcp;
    this.#sockets.add(socket);
    let closed = false;
    socket.once('close', () => {
      closed = true;
      this.#sockets.delete(socket);
    });
    return new Promise((resolve) => {
      const done = (status: number): void => {
        clearTimeout(timer);
        resolve({ source, status, closed: () => closed });
      };
      const timer = setTimeout(() => done(0), ANSWER_TIMEOUT_MS);
      let head = '';
      const onData = (d: Buffer): void => {
        head += d.toString('latin1');
        const m = /^HTTP\/1\.1 (\d{3}) /.exec(head);
        if (!m) return;
        socket.off('data', onData);
        done(Number(m[1]));
      };
      socket.on('data', onData);
      socket.once(this.#target.tls ? 'secureConnect' : 'connect', () => socket.write(UPGRADE_REQUEST));
      socket.once('close', () => done(0));
    });
  }

  #secure(tcp: Socket): TLSSocket {
    const socket = connect({
      socket: tcp,
      rejectUnauthorized: false,
      ...(this.#session ? { session: this.#session } : {}),
    });
    socket.on('session', (s: Buffer) => {
      this.#session ??= s;
    });
    socket.on('error', () => {});
    return socket;
  }

  /** Sockets the relay has not closed yet. */
  get liveSockets(): number {
    return this.#sockets.size;
  }

  destroyAll(): void {
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
  }
}

/** `count` loopback source addresses 127.0.B.C (B from `firstB`), `perSource` entries each, in order. */
export function loopbackSources(opts: { count: number; perSource: number; firstB: number }): string[] {
  const out: string[] = [];
  for (let i = 0; i < opts.count; i++) {
    const address = `127.0.${opts.firstB + Math.floor(i / 250)}.${1 + (i % 250)}`;
    for (let j = 0; j < opts.perSource; j++) out.push(address);
  }
  return out;
}
