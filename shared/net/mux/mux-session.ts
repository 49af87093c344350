/**
 * yamux-style stream multiplexing over one ordered byte stream (an ArqSession, or any Duplex in tests).
 * The session is I/O-free: feed it bytes with input(), give it a write() that returns false under
 * backpressure, and call transportDrained()/transportClosed(). See transport.ts for the bindings.
 *
 * Events: 'stream' (MuxStream, inbound; never with acceptStreams false), 'goaway' (code), 'close' (err?), 'error'
 * (only if listened to).
 */
import { EventEmitter } from 'node:events';
import type { TimerHandle } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import {
  encodeHeader,
  FLAG_ACK,
  FLAG_FIN,
  FLAG_RST,
  FLAG_SYN,
  type FrameHeader,
  GOAWAY_INTERNAL,
  GOAWAY_NORMAL,
  GOAWAY_PROTOCOL,
  RST_IDLE_TIMEOUT,
  RST_PROTOCOL,
  RST_REFUSED,
  RST_STREAM_LIMIT,
  TYPE_DATA,
  TYPE_GO_AWAY,
  TYPE_PING,
  TYPE_WINDOW_UPDATE,
} from './frame.js';
import { FrameParser } from './frame-parser.js';
import {
  BASE_WINDOW,
  type MuxConfig,
  type MuxOptions,
  type MuxStats,
  newMuxStats,
  resolveMuxConfig,
} from './mux-options.js';
import { MuxStream, type StreamHost } from './mux-stream.js';

/** Cap on unanswered pings (each holds a timer and a promise). */
const MAX_PENDING_PINGS = 64;

interface PendingPing {
  sentAt: number;
  timer: TimerHandle;
  resolve(rtt: number): void;
  reject(err: Error): void;
}

export class MuxSession extends EventEmitter {
  readonly stats: MuxStats = newMuxStats();
  readonly #opts: MuxOptions;
  readonly #cfg: MuxConfig;
  readonly #streams = new Map<number, MuxStream>();
  readonly #parser: FrameParser;
  readonly #host: StreamHost;
  readonly #acceptStreams: boolean;
  #nextId: number;
  #blocked = false;
  #pending = new Set<MuxStream>();
  #pumping = false;
  #closed = false;
  #localGoAway = false;
  #remoteGoAway = false;
  #rtt = 0;
  #pings = new Map<number, PendingPing>();
  #nextPing = 1;
  #keepAlive: TimerHandle | undefined;
  #idleTimer: TimerHandle | undefined;
  #idleAt = Number.POSITIVE_INFINITY;
  // the Data frame being received
  #cur: MuxStream | null = null;
  #curFin = false;
  #inputting = false;
  #grown = 0;
  #lastInputAt: number;
  #reentrant: Buffer[] = [];

  constructor(opts: MuxOptions) {
    super();
    this.#cfg = resolveMuxConfig(opts);
    this.#opts = opts;
    this.#acceptStreams = opts.acceptStreams !== false;
    this.#nextId = opts.role === 'client' ? 1 : 2;
    this.#lastInputAt = opts.clock.now();
    const cfg = this.#cfg;
    this.#host = {
      maxWindow: cfg.maxWindow,
      maxFrameData: cfg.maxFrameData,
      now: () => opts.clock.now(),
      rttMs: () => this.#rtt,
      sendControl: (type, flags, id, length) => this.#send(encodeHeader(type, flags, id, length), null),
      sendData: (id, payload) => this.#send(encodeHeader(TYPE_DATA, 0, id, payload.length), payload),
      tryGrow: (n) => {
        if (this.#grown + n > cfg.maxSessionGrowth) return false;
        this.#grown += n;
        return true;
      },
      ungrow: (n) => {
        this.#grown -= n;
      },
      schedule: (s) => {
        this.#pending.add(s);
        this.#pump();
      },
      startTurn: () => {
        if (this.#pumping || !this.#alone()) return false;
        this.#pumping = true;
        return true;
      },
      alone: () => this.#alone(),
      endTurn: (s, more) => {
        this.#pumping = false;
        if (more) this.#pending.add(s);
        if (this.#pending.size > 0) this.#pump();
      },
      release: (s) => {
        if (this.#streams.get(s.id) === s) this.#streams.delete(s.id);
        this.#pending.delete(s);
      },
    };
    // A Data frame can never exceed the largest window a stream may grant.
    this.#parser = new FrameParser(
      {
        // A Data frame's payload goes straight to its stream (#cur), or nowhere.
        header: (h) => {
          this.#onHeader(h);
          return this.#cur;
        },
        payloadEnd: () => this.#onPayloadEnd(),
      },
      cfg.maxWindow,
    );
    if (cfg.keepAliveMs > 0) {
      // A first ping measures the RTT that window auto-tuning needs.
      this.ping().catch(() => {});
      this.#armKeepAlive();
    }
  }

  get closed(): boolean {
    return this.#closed;
  }
  get streamCount(): number {
    return this.#streams.size;
  }
  /** Round-trip time of the last answered ping (0 until one is answered). */
  get rttMs(): number {
    return this.#rtt;
  }

  /** Opens an outbound stream (SYN is sent at once; data may follow before the peer's ACK). */
  open(): MuxStream {
    if (this.#closed || this.#remoteGoAway || this.#localGoAway) {
      throw new TunnelError('CLOSED', 'mux: session is closed or going away; no new streams');
    }
    if (this.#streams.size >= this.#cfg.maxStreams) {
      throw new TunnelError('STREAM_LIMIT', `mux: ${this.#cfg.maxStreams} streams already open (maxStreams)`);
    }
    if (this.#nextId > 0xffffffff) throw new TunnelError('LIMIT_EXCEEDED', 'mux: stream ids exhausted');
    const id = this.#nextId;
    this.#nextId += 2;
    const s = this.#newStream(id);
    this.stats.streamsOpened++;
    this.#send(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_SYN, id, this.#cfg.initialWindow - BASE_WINDOW), null);
    return s;
  }

  /**
   * Feeds bytes from the transport. A protocol error closes the session (GoAway protocol-error). A bound
   * function, so a transport's 'data' event can call it directly.
   */
  readonly input = (chunk: Buffer): void => {
    if (this.#closed) return;
    this.#lastInputAt = this.#opts.clock.now();
    if (this.#inputting) {
      // Re-entered from a handler (a transport that delivers synchronously): keep byte order.
      this.#reentrant.push(chunk);
      return;
    }
    this.#inputting = true;
    try {
      this.#parser.push(chunk);
      while (this.#reentrant.length > 0 && !this.#closed) this.#parser.push(this.#reentrant.shift()!);
    } catch (err) {
      const e = err instanceof TunnelError ? err : new TunnelError('INTERNAL', 'mux: input failed');
      this.#shutdown(e, e.code === 'INTERNAL' ? GOAWAY_INTERNAL : GOAWAY_PROTOCOL);
    } finally {
      this.#inputting = false;
      this.#reentrant = [];
    }
  };

  transportDrained(): void {
    this.#blocked = false;
    this.#pump();
  }

  transportClosed(err?: Error): void {
    if (this.#closed) return;
    const e =
      err instanceof TunnelError
        ? err
        : new TunnelError('CLOSED', `mux: transport closed${err ? ` (${err.message})` : ''}`);
    this.#shutdown(e, null);
  }

  /**
   * Sends a ping and resolves with the round-trip time; rejects with TIMEOUT after pingTimeoutMs, and then
   * closes the session too unless other bytes arrived from the peer meanwhile.
   */
  ping(): Promise<number> {
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'mux: session is closed'));
    if (this.#pings.size >= MAX_PENDING_PINGS) {
      return Promise.reject(
        new TunnelError('LIMIT_EXCEEDED', `mux: ${MAX_PENDING_PINGS} pings already pending`),
      );
    }
    const id = this.#nextPing;
    this.#nextPing = (this.#nextPing + 1) >>> 0 || 1;
    return new Promise((resolve, reject) => {
      const timer = this.#opts.clock.setTimer(this.#cfg.pingTimeoutMs, () => {
        this.#pings.delete(id);
        const e = new TunnelError('TIMEOUT', `mux: ping unanswered for ${this.#cfg.pingTimeoutMs} ms`);
        reject(e);
        // Bytes still arriving mean the peer is alive and the ping is queued behind data: keep the session.
        if (this.#opts.clock.now() - this.#lastInputAt >= this.#cfg.pingTimeoutMs) this.#shutdown(e, null);
      });
      this.#pings.set(id, { sentAt: this.#opts.clock.now(), timer, resolve, reject });
      this.stats.pingsSent++;
      this.#send(encodeHeader(TYPE_PING, FLAG_SYN, 0, id), null);
    });
  }

  /** Tells the peer no new streams will be accepted; existing streams continue. */
  goAway(code = GOAWAY_NORMAL): void {
    if (this.#closed || this.#localGoAway) return;
    this.#localGoAway = true;
    this.#send(encodeHeader(TYPE_GO_AWAY, 0, 0, code), null);
  }

  /** Sends GoAway, destroys every stream (with `err` if given) and releases the transport. */
  close(err?: TunnelError): void {
    this.#shutdown(err ?? null, err ? GOAWAY_INTERNAL : GOAWAY_NORMAL);
  }

  // ------------------------------------------------------------------ frames in
  #onHeader(h: FrameHeader): void {
    this.stats.framesIn++;
    if (h.type === TYPE_PING) {
      this.#onPing(h);
      return;
    }
    if (h.type === TYPE_GO_AWAY) {
      this.#remoteGoAway = true;
      this.emit('goaway', h.length);
      return;
    }
    const id = h.streamId;
    let s = this.#streams.get(id);
    if (h.flags & FLAG_SYN) {
      if (s || id === 0 || (id & 1) === (this.#opts.role === 'client' ? 1 : 0)) {
        throw new TunnelError('WIRE_MALFORMED', `mux: bad SYN for stream ${id}`);
      }
      const refuse = this.#refusal();
      if (refuse >= 0) {
        this.#send(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_RST, id, refuse), null);
        if (h.type === TYPE_DATA) this.#discard();
        return;
      }
      s = this.#newStream(id);
      this.stats.streamsAccepted++;
      // The answer is needed only to grant window beyond the base: with the base window (the default) the
      // stream's first frame answers, so a new connection's reply carries it instead of a datagram of its own.
      const extra = this.#cfg.initialWindow - BASE_WINDOW;
      if (extra > 0) this.#send(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_ACK, id, extra), null);
    }
    if (!s) {
      if (h.type === TYPE_DATA) {
        if (h.length > 0) this.stats.strayData++;
        this.#discard();
      }
      return;
    }
    if (h.flags & FLAG_RST) {
      if (h.type === TYPE_DATA) this.#discard();
      s.onReset(h.type === TYPE_WINDOW_UPDATE ? h.length : 0);
      return;
    }
    if (h.type === TYPE_DATA) {
      if (!s.takeCredit(h.length)) {
        throw new TunnelError('WIRE_MALFORMED', `mux: stream ${id} sent ${h.length} bytes beyond its window`);
      }
      this.#cur = s;
      this.#curFin = (h.flags & FLAG_FIN) !== 0;
    } else {
      if (s.sendWindow + h.length > 0xffffffff) {
        throw new TunnelError('WIRE_MALFORMED', `mux: stream ${id} window update overflows`);
      }
      if (h.length > 0) s.onWindowUpdate(h.length);
      if (h.flags & FLAG_FIN) s.onFin();
    }
    if (h.flags & FLAG_SYN) this.emit('stream', s);
  }

  /**
   * Why a stream the peer opens now is reset at once (its RST code, counted), or -1 when it is accepted. A peer
   * that may not open streams at all is refused first: its streams never hold a window or a buffer here.
   */
  #refusal(): number {
    if (!this.#acceptStreams) {
      this.stats.refused.protocolViolation++;
      return RST_PROTOCOL;
    }
    if (this.#localGoAway || this.#closed) {
      this.stats.refused.goingAway++;
      return RST_REFUSED;
    }
    if (this.#streams.size >= this.#cfg.maxStreams) {
      this.stats.refused.limit++;
      return RST_STREAM_LIMIT;
    }
    return -1;
  }

  /** The Data payload that follows (if any) is skipped: it has no reader while #cur is null. */
  #discard(): void {
    this.#cur = null;
    this.#curFin = false;
  }

  #onPayloadEnd(): void {
    const s = this.#cur;
    this.#cur = null;
    if (s && this.#curFin) s.onFin();
    this.#curFin = false;
  }

  #onPing(h: FrameHeader): void {
    if (h.streamId !== 0) throw new TunnelError('WIRE_MALFORMED', `mux: ping on stream ${h.streamId}`);
    if (h.flags & FLAG_SYN) {
      this.#send(encodeHeader(TYPE_PING, FLAG_ACK, 0, h.length), null);
      return;
    }
    const p = this.#pings.get(h.length);
    if (!p) return;
    this.#pings.delete(h.length);
    this.#opts.clock.clearTimer(p.timer);
    this.#rtt = Math.max(0, this.#opts.clock.now() - p.sentAt);
    p.resolve(this.#rtt);
  }

  // ------------------------------------------------------------------ frames out
  #send(header: Buffer, payload: Buffer | null): void {
    if (this.#closed) return;
    this.stats.framesOut++;
    let ok = this.#opts.write(header);
    if (payload) ok = this.#opts.write(payload);
    if (!ok) this.#blocked = true;
  }

  /** Nothing waits for the send turn and the transport takes frames. */
  #alone(): boolean {
    return !this.#blocked && !this.#closed && this.#pending.size === 0;
  }

  /**
   * Sends pending stream data round-robin while the transport accepts: the stream at the head of the queue
   * sends one frame and goes to the back if it has more. The turn survives a blocked transport, so a stream
   * that just became ready is at most one frame per busy stream away from the wire.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      const pending = this.#pending;
      while (!this.#blocked && !this.#closed && pending.size > 0) {
        const s = pending.values().next().value as MuxStream;
        pending.delete(s);
        if (s.sendSome()) pending.add(s);
      }
    } finally {
      this.#pumping = false;
    }
  }

  // ------------------------------------------------------------------ streams, timers, shutdown
  #newStream(id: number): MuxStream {
    const s = new MuxStream(this.#host, id, this.#cfg.initialWindow, this.#cfg.streamHighWater);
    this.#streams.set(id, s);
    if (this.#cfg.idleTimeoutMs > 0) this.#armIdle(s.lastActivity + this.#cfg.idleTimeoutMs);
    return s;
  }

  #armKeepAlive(): void {
    this.#keepAlive = this.#opts.clock.setTimer(this.#cfg.keepAliveMs, () => {
      if (this.#closed) return;
      this.ping().catch(() => {});
      this.#armKeepAlive();
    });
  }

  #armIdle(at: number): void {
    if (at >= this.#idleAt && this.#idleTimer) return;
    this.#opts.clock.clearTimer(this.#idleTimer);
    this.#idleAt = at;
    this.#idleTimer = this.#opts.clock.setTimer(Math.max(0, at - this.#opts.clock.now()), () => {
      this.#idleTimer = undefined;
      this.#idleAt = Number.POSITIVE_INFINITY;
      this.#sweepIdle();
    });
  }

  #sweepIdle(): void {
    if (this.#closed) return;
    const now = this.#opts.clock.now();
    const idle = this.#cfg.idleTimeoutMs;
    let next = Number.POSITIVE_INFINITY;
    for (const s of [...this.#streams.values()]) {
      if (now - s.lastActivity >= idle) {
        s.reset(RST_IDLE_TIMEOUT, new TunnelError('TIMEOUT', `stream ${s.id}: idle for ${idle} ms`));
      } else next = Math.min(next, s.lastActivity + idle);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#armIdle(next);
  }

  #shutdown(err: TunnelError | null, goAway: number | null): void {
    if (this.#closed) return;
    if (goAway !== null) this.#send(encodeHeader(TYPE_GO_AWAY, 0, 0, goAway), null);
    this.#closed = true;
    this.#opts.clock.clearTimer(this.#keepAlive);
    this.#opts.clock.clearTimer(this.#idleTimer);
    for (const p of this.#pings.values()) {
      this.#opts.clock.clearTimer(p.timer);
      p.reject(err ?? new TunnelError('CLOSED', 'mux: session closed'));
    }
    this.#pings.clear();
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    this.#pending.clear();
    for (const s of streams) {
      if (err) s.fail(err);
      else s.destroy();
    }
    this.#opts.closeTransport?.();
    if (err && this.listenerCount('error') > 0) this.emit('error', err);
    this.emit('close', err ?? undefined);
  }
}
