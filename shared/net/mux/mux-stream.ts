/**
 * One multiplexed stream: a Node Duplex with per-stream credit flow control.
 * Receive: the peer may send at most the credit we granted; bytes count as consumed once the Readable
 * accepts them (push() true), so a slow reader holds at most window + highWaterMark bytes here.
 * Send: a chunk goes out in frames of at most maxFrameData and the peer's remaining credit, scheduled
 * round-robin with the other streams by the session; the write callback fires once all of it is sent.
 */
import { Duplex } from 'node:stream';
import { isTunnelError, TunnelError } from '../../errors.js';
import { RingQueue } from '../buffers/ring-queue.js';
import {
  FLAG_FIN,
  FLAG_RST,
  RST_CANCEL,
  RST_IDLE_TIMEOUT,
  RST_INTERNAL,
  RST_NAMES,
  RST_REFUSED,
  RST_STREAM_LIMIT,
  RST_UPSTREAM_FAILED,
  TYPE_WINDOW_UPDATE,
} from './frame.js';

/** What a stream needs from its session. */
export interface StreamHost {
  readonly maxWindow: number;
  readonly maxFrameData: number;
  now(): number;
  rttMs(): number;
  sendControl(type: number, flags: number, id: number, length: number): void;
  sendData(id: number, payload: Buffer): void;
  /** Reserves `n` bytes of the session's window-growth budget; false = none left. */
  tryGrow(n: number): boolean;
  /** Returns growth reserved by a stream that is going away. */
  ungrow(n: number): void;
  schedule(s: MuxStream): void;
  /**
   * Takes the send turn when the scheduler has nothing else to do (no stream waiting, the transport not
   * blocked, no turn running): the stream then sends its frames itself; endTurn() must follow. False: the
   * stream is scheduled instead (schedule()).
   */
  startTurn(): boolean;
  /** No other stream waits and the transport takes more: a stream holding the turn may send another frame. */
  alone(): boolean;
  /** Ends a turn startTurn() gave; `more`: the stream still has data and credit (it joins the round robin). */
  endTurn(s: MuxStream, more: boolean): void;
  release(s: MuxStream): void;
}

export class MuxStream extends Duplex {
  readonly id: number;
  /** Credit the peer granted us (bytes we may still send). */
  sendWindow: number;
  lastActivity: number;
  readonly #host: StreamHost;
  #pend: Buffer | null = null;
  #pendOff = 0;
  #pendCb: ((err?: Error | null) => void) | null = null;
  #finalCb: ((err?: Error | null) => void) | null = null;
  #finSent = false;
  #finRecv = false;
  #ended = false;
  #recvAvail: number;
  #recvSize: number;
  #consumed = 0;
  #lastUpdateAt: number;
  /** Received chunks the Readable has not taken yet; bounded in bytes by the credit this side grants. */
  readonly #queue = new RingQueue<Buffer>({ capacity: Number.POSITIVE_INFINITY });
  #queueBytes = 0;
  #readBlocked = false;
  #resetByPeer = false;
  #released = false;
  #grown = 0;

  constructor(host: StreamHost, id: number, window: number, highWater: number) {
    super({ allowHalfOpen: true, readableHighWaterMark: highWater, writableHighWaterMark: highWater });
    this.#host = host;
    this.id = id;
    this.sendWindow = 256 * 1024;
    this.#recvAvail = window;
    this.#recvSize = window;
    this.#lastUpdateAt = host.now();
    this.lastActivity = this.#lastUpdateAt;
  }

  /** Bytes received and held here (not yet accepted by the Readable). */
  get queuedBytes(): number {
    return this.#queueBytes;
  }
  /** Current receive window size (grows with auto-tuning). */
  get recvWindow(): number {
    return this.#recvSize;
  }
  /** True once FIN has been both sent and received. */
  get fullyClosed(): boolean {
    return this.#finSent && this.#finRecv;
  }

  // ------------------------------------------------------------------ called by the session
  /** A Data frame of `length` bytes was announced; false = over the credit we granted (protocol error). */
  takeCredit(length: number): boolean {
    if (length > this.#recvAvail) return false;
    this.#recvAvail -= length;
    return true;
  }

  onData(chunk: Buffer): void {
    this.lastActivity = this.#host.now();
    if (this.destroyed || this.#ended) return;
    if (this.#queue.length === 0 && !this.#readBlocked) {
      this.#consumed += chunk.length;
      if (!this.push(chunk)) this.#readBlocked = true;
      this.#maybeUpdate();
    } else {
      this.#queue.push(chunk);
      this.#queueBytes += chunk.length;
    }
  }

  onFin(): void {
    if (this.#finRecv) return;
    this.#finRecv = true;
    this.#maybeEnd();
    if (this.fullyClosed) this.#release();
  }

  onWindowUpdate(delta: number): void {
    this.sendWindow += delta;
    if (this.#pend) this.#host.schedule(this);
  }

  onReset(code: number): void {
    this.#resetByPeer = true;
    const name = RST_NAMES[code] ?? `code ${code}`;
    const err =
      code === RST_STREAM_LIMIT
        ? new TunnelError('STREAM_LIMIT', `stream ${this.id}: refused by the peer, too many open streams`)
        : code === RST_REFUSED
          ? new TunnelError('STREAM_REFUSED', `stream ${this.id}: refused by the peer`)
          : code === RST_UPSTREAM_FAILED
            ? new TunnelError('UPSTREAM_FAILED', `stream ${this.id}: the peer could not reach the upstream`)
            : new TunnelError('STREAM_RESET', `stream ${this.id}: reset by the peer (${name})`);
    this.#release();
    this.fail(err);
  }

  /**
   * Destroys with `err` when someone listens for 'error', plainly otherwise: a peer-caused failure must not
   * become an uncaught exception in an application that only listens for 'close'.
   */
  fail(err: Error): void {
    if (this.listenerCount('error') > 0) this.destroy(err);
    else this.destroy();
  }

  /** Sends one frame of pending data if credit allows; true = call again (more data and credit left). */
  sendSome(): boolean {
    const pend = this.#pend;
    if (!pend || this.destroyed) return false;
    if (this.sendWindow <= 0) return false;
    const n = Math.min(pend.length - this.#pendOff, this.sendWindow, this.#host.maxFrameData);
    this.#host.sendData(this.id, pend.subarray(this.#pendOff, this.#pendOff + n));
    this.sendWindow -= n;
    this.#pendOff += n;
    this.lastActivity = this.#host.now();
    if (this.#pendOff < pend.length) return this.sendWindow > 0;
    const cb = this.#pendCb!;
    this.#pend = null;
    this.#pendCb = null;
    if (this.#finalCb) this.#sendFin(this.#finalCb);
    cb();
    return this.#pend !== null && this.sendWindow > 0;
  }

  /** Resets the stream from this side with an RST code. */
  reset(code = RST_CANCEL, err?: Error): void {
    if (!this.#released) {
      this.#host.sendControl(TYPE_WINDOW_UPDATE, FLAG_RST, this.id, code);
      this.#release();
    }
    if (err) this.fail(err);
    else this.destroy();
  }

  // ------------------------------------------------------------------ Duplex implementation
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (chunk.length === 0) {
      cb();
      return;
    }
    this.#pend = chunk;
    this.#pendOff = 0;
    this.#pendCb = cb;
    this.#sendOrSchedule();
  }

  /**
   * Sends now when the scheduler would pick this stream next anyway (nothing else waits): frame after frame
   * while it stays alone, as the session's round robin would; otherwise it waits for its turn there.
   */
  #sendOrSchedule(): void {
    const host = this.#host;
    if (!host.startTurn()) {
      host.schedule(this);
      return;
    }
    let more = false;
    try {
      do more = this.sendSome();
      while (more && host.alone());
    } finally {
      host.endTurn(this, more);
    }
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.#pend) this.#finalCb = cb;
    else this.#sendFin(cb);
  }

  override _read(): void {
    this.#readBlocked = false;
    for (let b = this.#queue.shift(); b !== undefined; b = this.#queue.shift()) {
      this.#queueBytes -= b.length;
      this.#consumed += b.length;
      if (!this.push(b)) {
        this.#readBlocked = true;
        break;
      }
    }
    this.#maybeEnd();
    this.#maybeUpdate();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.#released && !this.#resetByPeer && !this.fullyClosed) {
      this.#host.sendControl(TYPE_WINDOW_UPDATE, FLAG_RST, this.id, resetCodeFor(err));
    }
    this.#release();
    this.#pend = null;
    this.#pendCb = null;
    this.#queue.clear();
    this.#queueBytes = 0;
    cb(err);
  }

  // ------------------------------------------------------------------ internals
  #sendFin(cb: (err?: Error | null) => void): void {
    this.#finalCb = null;
    if (!this.#finSent && !this.destroyed) {
      this.#finSent = true;
      this.#host.sendControl(TYPE_WINDOW_UPDATE, FLAG_FIN, this.id, 0);
      if (this.fullyClosed) this.#release();
    }
    cb();
  }

  #maybeEnd(): void {
    if (this.#finRecv && !this.#ended && this.#queue.length === 0) {
      this.#ended = true;
      this.push(null);
    }
  }

  /** Grants the peer the consumed bytes back once half the window is used, doubling the window while fast. */
  #maybeUpdate(): void {
    if (this.#finRecv || this.destroyed || this.#consumed < this.#recvSize / 2) return;
    const now = this.#host.now();
    let grow = 0;
    const rtt = this.#host.rttMs();
    if (this.#recvSize < this.#host.maxWindow && now - this.#lastUpdateAt < 4 * Math.max(rtt, 1)) {
      grow = Math.min(this.#recvSize, this.#host.maxWindow - this.#recvSize);
      if (!this.#host.tryGrow(grow)) grow = 0;
      else this.#grown += grow;
    }
    const delta = this.#consumed + grow;
    this.#recvSize += grow;
    this.#recvAvail += delta;
    this.#consumed = 0;
    this.#lastUpdateAt = now;
    this.#host.sendControl(TYPE_WINDOW_UPDATE, 0, this.id, delta);
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#host.ungrow(this.#grown);
    this.#grown = 0;
    this.#host.release(this);
  }
}

function resetCodeFor(err: Error | null): number {
  if (!err) return RST_CANCEL;
  if (isTunnelError(err, 'STREAM_LIMIT')) return RST_STREAM_LIMIT;
  if (isTunnelError(err, 'STREAM_REFUSED')) return RST_REFUSED;
  if (isTunnelError(err, 'UPSTREAM_FAILED')) return RST_UPSTREAM_FAILED;
  if (isTunnelError(err, 'TIMEOUT')) return RST_IDLE_TIMEOUT;
  return RST_INTERNAL;
}
