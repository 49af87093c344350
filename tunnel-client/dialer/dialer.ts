/**
 * The agent's dialer: answers each inbound hub stream. It reads the stream's OPEN text, checks it
 * against the allowlist (per stream), dials with a timeout, replies (OK / REFUSED / UPSTREAM_FAILED /
 * BAD_REQUEST with a reason) and then splices stream and socket both ways. The default upstream is
 * spoken to as its URL says: for `@upstream` with an https URL the agent runs the TLS client (CA from
 * the options; see docs/PROTOCOL.md), so the hub's path proxy can send plain HTTP/1.1.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Clock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { TlsSessionCache } from '../../shared/kit/http/tls-session-cache.js';
import type { MuxStream } from '../../shared/net/mux/mux-stream.js';
import {
  OPEN_BAD_REQUEST,
  OPEN_OK,
  OPEN_REFUSED,
  OPEN_UPSTREAM_FAILED,
  readOpenRequest,
  replyOpen,
} from '../../shared/net/mux/open-target.js';
import { splice } from '../../shared/net/tunnel-streams/splice.js';
import { type Allowlist, formatHostPort, type HostPort } from './allowlist.js';
import { serveWithToken } from './token-injector.js';

export const DEFAULT_DIAL_TIMEOUT_MS = 10_000;
/** https upstreams whose TLS session the dialer keeps for resumption. */
export const MAX_UPSTREAM_TLS_SESSIONS = 64;
const NO_IMPERSONATION =
  'no service-account token to act as the caller with (impersonation), and the caller may only read';

export interface DialerOptions {
  allowlist: Allowlist;
  clock: Clock;
  dialTimeoutMs?: number;
  /** TLS to an https upstream: CA (PEM) to trust instead of the system's, and whether to verify. */
  upstreamCa?: string | undefined;
  upstreamInsecure?: boolean;
  /**
   * Requests on `@upstream` streams carry this file's token instead of the client's, and impersonate the caller
   * the hub names (token-injector.ts). Without it the agent cannot impersonate: it refuses a read-only caller's
   * write the relay left to the API server.
   */
  upstreamTokenFile?: string | undefined;
  /** Where to connect for `@upstream` instead of the URL's host:port (in a pod: the API server's service address). */
  upstreamDial?: HostPort | undefined;
  log?: (line: string) => void;
}

export interface DialerStats {
  streams: number;
  dialed: number;
  refused: number;
  failed: number;
  bad: number;
  active: number;
}

export class Dialer {
  readonly stats: DialerStats = { streams: 0, dialed: 0, refused: 0, failed: 0, bad: 0, active: 0 };
  readonly #options: DialerOptions;
  /** TLS sessions of https upstreams, so a new upstream connection resumes instead of a full handshake. */
  readonly #tlsSessions = new TlsSessionCache(MAX_UPSTREAM_TLS_SESSIONS);
  /**
   * The OpenSSL context of every https upstream dial, built at the first: one per dial cost the agent 0.35 ms
   * of CPU per new upstream connection, 0.65 ms with a CA to parse (docs/BENCHMARKS.md, (b3)).
   */
  #tlsContext: tls.SecureContext | undefined;

  constructor(o: DialerOptions) {
    this.#options = o;
  }

  /** Upstreams with a TLS session kept for resumption. */
  get tlsSessionsKept(): number {
    return this.#tlsSessions.size;
  }

  /** Handles one inbound stream; never throws (failures reset or refuse the stream). */
  handle(stream: MuxStream): void {
    this.stats.streams++;
    stream.on('error', () => {});
    this.#handle(stream).catch(() => stream.destroy());
  }

  async #handle(stream: MuxStream): Promise<void> {
    let target: string;
    try {
      target = await readOpenRequest(stream, { clock: this.#options.clock });
    } catch (err) {
      this.stats.bad++;
      stream.destroy(err as Error);
      return;
    }
    const r = this.#options.allowlist.resolve(target);
    if (r.kind === 'bad') {
      this.stats.bad++;
      return replyOpen(stream, OPEN_BAD_REQUEST, r.reason);
    }
    if (r.kind === 'refused') {
      this.stats.refused++;
      this.#options.log?.(`stream ${stream.id}: refused ${target} (${r.reason})`);
      return replyOpen(stream, OPEN_REFUSED, r.reason);
    }
    const identity = r.identity;
    const tokenFile = identity === undefined ? undefined : this.#options.upstreamTokenFile;
    if (identity?.readOnly && !tokenFile) {
      this.stats.refused++;
      return replyOpen(stream, OPEN_REFUSED, NO_IMPERSONATION);
    }
    let socket: net.Socket;
    try {
      const dialAt = identity !== undefined ? (this.#options.upstreamDial ?? r.addr) : r.addr;
      socket = await this.#dial({ addr: dialAt, servername: r.addr.host }, r.tls, stream);
    } catch (err) {
      this.stats.failed++;
      const reason = (err as Error).message;
      this.#options.log?.(`stream ${stream.id}: ${target} failed (${reason})`);
      if (!stream.destroyed) replyOpen(stream, OPEN_UPSTREAM_FAILED, reason);
      return;
    }
    if (stream.destroyed) return void socket.destroy();
    this.stats.dialed++;
    this.stats.active++;
    socket.once('close', () => this.stats.active--);
    replyOpen(stream, OPEN_OK);
    if (identity !== undefined && tokenFile) {
      serveWithToken(stream, socket, { tokenFile, identity });
      return;
    }
    const where = formatHostPort(r.addr);
    splice(
      stream,
      socket,
      (e) =>
        new TunnelError('UPSTREAM_FAILED', `${where}: ${(e as NodeJS.ErrnoException).code ?? e.message}`),
    );
  }

  /** Connects (and for TLS, handshakes) within the dial timeout; rejects with a reason naming the address. */
  #dial(to: { addr: HostPort; servername: string }, useTls: boolean, stream: MuxStream): Promise<net.Socket> {
    const ms = this.#options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
    const { addr, servername } = to;
    const where = formatHostPort(addr);
    const sessionKey = `${where} ${servername}`;
    return new Promise((resolve, reject) => {
      const socket = useTls
        ? this.#tlsConnect(addr, servername, sessionKey)
        : net.connect({ host: addr.host, port: addr.port, allowHalfOpen: true });
      let settled = false;
      const finish = (err: Error | null): void => {
        if (settled) return;
        settled = true;
        this.#options.clock.clearTimer(timer);
        stream.off('close', onStreamClose);
        if (err) {
          if (useTls) this.#tlsSessions.forget(sessionKey);
          socket.destroy();
          reject(err);
        } else {
          socket.off('error', onError);
          resolve(socket);
        }
      };
      const onError = (e: NodeJS.ErrnoException): void =>
        finish(new Error(`${where}: ${e.code ?? e.message}${e.code && e.message ? ` (${e.message})` : ''}`));
      const onStreamClose = (): void => finish(new Error(`${where}: stream closed while dialing`));
      const timer = this.#options.clock.setTimer(ms, () =>
        finish(new Error(`${where}: no connection within ${ms} ms`)),
      );
      socket.once('error', onError);
      socket.once(useTls ? 'secureConnect' : 'connect', () => finish(null));
      stream.once('close', onStreamClose);
    });
  }

  /** A TLS client to an https upstream, offering the session kept from the last connection to it. */
  #tlsConnect(addr: HostPort, servername: string, sessionKey: string): tls.TLSSocket {
    const ca = this.#options.upstreamCa;
    this.#tlsContext ??= tls.createSecureContext(ca === undefined ? {} : { ca });
    const socket = tls.connect({
      host: addr.host,
      port: addr.port,
      servername: net.isIP(servername) ? undefined : servername,
      secureContext: this.#tlsContext,
      rejectUnauthorized: this.#options.upstreamInsecure !== true,
      ALPNProtocols: ['http/1.1'],
      session: this.#tlsSessions.get(sessionKey),
    });
    // TLS 1.3 sends its tickets after the handshake; a dial that fails forgets what it kept (finish above).
    socket.on('session', (session: Buffer) => this.#tlsSessions.keep(sessionKey, session));
    return socket;
  }
}
