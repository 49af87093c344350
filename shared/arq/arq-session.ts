/**
 * A reliable, ordered byte stream over an unreliable datagram path (the KCP design, stream mode):
 * sequence numbers, cumulative una + per-segment selective ACKs, fast retransmit, RTO from measured RTT,
 * send/receive windows, TCP-like congestion control, delayed ACKs, zero-window probing, dead-link detection.
 *
 * Ownership: write() keeps references to the given buffers until acknowledged; input() keeps views into
 * the given datagram (delivered data are views into it). Neither buffer may be reused by the caller.
 * Events: 'data' (Buffer, in order), 'drain', 'error' (TunnelError; only if someone listens), 'close' (err?).
 */
import { EventEmitter } from 'node:events';
import type { Clock, TimerHandle } from '../clock.js';
import { TunnelError } from '../errors.js';
import {
  type ArqConfig,
  type ArqOptions,
  type ArqStats,
  checkMtu,
  newArqStats,
  resolveArqConfig,
} from './arq-options.js';
import { Reassembly } from './reassembly.js';
import {
  CMD_ACK,
  CMD_PUSH,
  CMD_PUSHF,
  CMD_WASK,
  CMD_WINS,
  FRAG_HEADER,
  isKnownCmd,
  MAX_SEGMENT_DATA,
  readHeader,
  SEG_HEADER,
  type SegmentHeader,
  seqDiff,
} from './segment.js';
import { SendQueue } from './send-queue.js';

interface OutSeg {
  sn: number;
  data: Buffer;
  ts: number;
  resendAt: number;
  rto: number;
  xmit: number;
  fastack: number;
  acked: boolean;
  fastQueued: boolean;
  /** Timed out but not yet resent (waiting for congestion-window room). */
  lost: boolean;
}

/** Segments resent at once when a retransmission timeout fires; the rest wait for window room. */
const TIMEOUT_BURST = 2;

export class ArqSession extends EventEmitter {
  readonly conv: number;
  readonly stats: ArqStats = newArqStats();
  readonly #cfg: ArqConfig;
  readonly #clock: Clock;
  readonly #output: (d: Buffer) => void;
  #mtu: number;
  #closed = false;
  #ending = false;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  // --- send side
  readonly #sq = new SendQueue();
  #sb: OutSeg[] = [];
  #sbHead = 0;
  #sndNxt = 0;
  #unackedBytes = 0;
  #rmtWnd: number;
  #cwnd: number;
  #ssthresh: number;
  #recoverSn = 0;
  #inRecovery = false;
  #fast: OutSeg[] = [];
  #lost: OutSeg[] = [];
  #lostCount = 0;
  #unacked = 0;
  #nextResendAt = Number.POSITIVE_INFINITY;
  #needDrain = false;
  #tailDue = false;
  #probeAt = 0;
  #probeWait: number;
  #needWask = false;
  #needWins = false;
  // --- rtt
  #srtt = 0;
  #rttvar = 0;
  #rto: number;
  // --- receive side
  #rcvNxt = 0;
  #ring: (Buffer | undefined)[];
  #ringHead = 0;
  #oooBytes = 0;
  #deliver: Buffer[] = [];
  #deliverHead = 0;
  #deliverBytes = 0;
  #paused = false;
  #emitting = false;
  readonly #reasm: Reassembly;
  #acks: number[] = [];
  #ackDueAt = Number.POSITIVE_INFINITY;
  #ackNow = false;
  #lastRecvAt: number;
  #flushing = false;
  #reentrant: Buffer[] = [];
  readonly #h: SegmentHeader = { conv: 0, cmd: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
  // --- datagram being filled
  #dg: Buffer | null = null;
  #dgLen = 0;
  #spare: Buffer | null = null;
  readonly #defer: ((fn: () => void) => void) | undefined;
  #deferred = false;

  constructor(opts: ArqOptions) {
    super();
    this.#cfg = resolveArqConfig(opts);
    this.conv = opts.conv;
    this.#mtu = opts.mtu;
    this.#clock = opts.clock;
    this.#output = opts.output;
    this.#defer = opts.defer;
    this.#rmtWnd = this.#cfg.recvWindow;
    this.#cwnd = this.#cfg.congestionControl ? this.#cfg.initialCwnd : this.#cfg.sendWindow;
    this.#ssthresh = this.#cfg.sendWindow;
    this.#rto = this.#cfg.initialRtoMs;
    this.#probeWait = this.#cfg.probeMinMs;
    this.#ring = new Array(this.#cfg.recvWindow);
    this.#reasm = new Reassembly(this.#cfg.maxReassembly);
    this.#lastRecvAt = this.#clock.now();
    this.#sndNxt = this.#cfg.initialSn;
    this.#rcvNxt = this.#cfg.initialSn;
  }

  get mtu(): number {
    return this.#mtu;
  }
  get mss(): number {
    return this.#mtu - SEG_HEADER;
  }
  get closed(): boolean {
    return this.#closed;
  }
  /** Bytes written and not yet acknowledged. */
  get bufferedBytes(): number {
    return this.#sq.bytes + this.#unackedBytes;
  }
  get rtoMs(): number {
    return this.#rto;
  }
  get srttMs(): number {
    return this.#srtt;
  }
  get cwnd(): number {
    return this.#cwnd;
  }
  /** Bytes held by the receive side: out-of-order, undelivered and partially reassembled segments. */
  get recvHeldBytes(): number {
    return this.#oooBytes + this.#deliverBytes + this.#reasm.bytes;
  }
  get inFlight(): number {
    return this.#sb.length - this.#sbHead;
  }

  /** Changes the datagram size from now on; segments already in flight that no longer fit are fragmented. */
  setMtu(mtu: number): void {
    checkMtu(mtu);
    this.#mtu = mtu;
    this.#finishDatagram();
  }

  write(bytes: Uint8Array): boolean {
    if (this.#closed || this.#ending)
      throw new TunnelError('CLOSED', `arq conv ${this.conv}: write after close`);
    const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#sq.push(b);
    if (this.#sq.bytes >= this.mss) this.flush(false);
    if (this.#sq.bytes > 0 && !this.#tailDue) {
      this.#tailDue = true;
      this.#arm();
    }
    const ok = this.bufferedBytes <= this.#cfg.sendHighWater;
    if (!ok) this.#needDrain = true;
    return ok;
  }

  /** Stops 'data' events; the advertised window shrinks as undelivered data accumulates. */
  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    const wasClosed = this.#freeSlots() === 0;
    this.#emitData();
    if (wasClosed && this.#freeSlots() > 0 && !this.#closed) {
      this.#needWins = true;
      this.flush(false);
    }
  }

  /** Closes once everything written has been acknowledged (or the link is declared dead). */
  end(): void {
    if (this.#closed) return;
    this.#ending = true;
    this.flush(true);
    this.#maybeFinishEnd();
  }

  close(err?: TunnelError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#sq.clear();
    this.#sb = [];
    this.#sbHead = 0;
    this.#fast = [];
    this.#lost = [];
    this.#ring = [];
    this.#deliver = [];
    this.#reasm.clear();
    if (err && this.listenerCount('error') > 0) this.emit('error', err);
    this.emit('close', err);
  }

  destroy(err?: Error): void {
    this.close(err instanceof TunnelError ? err : undefined);
  }

  /** Handles one datagram from the path. Garbage is counted and dropped; this never throws. */
  input(datagram: Buffer): void {
    if (this.#closed) return;
    if (this.#flushing) {
      if (this.#reentrant.length < 1024) this.#reentrant.push(datagram);
      return;
    }
    this.stats.datagramsIn++;
    this.stats.bytesIn += datagram.length;
    if (datagram.length < SEG_HEADER) {
      this.stats.garbage.short++;
      return;
    }
    const h = this.#h;
    const now = this.#clock.now();
    const ts32 = now >>> 0;
    const unaBefore = this.#sndUna();
    let valid = false;
    let maxAck = -1;
    let maxAckTs = 0;
    let off = 0;
    while (off + SEG_HEADER <= datagram.length) {
      readHeader(datagram, off, h);
      if (h.conv !== this.conv) {
        this.stats.garbage.conv++;
        break;
      }
      if (!isKnownCmd(h.cmd)) {
        this.stats.garbage.cmd++;
        break;
      }
      const end = off + SEG_HEADER + h.len;
      if (h.len > MAX_SEGMENT_DATA || end > datagram.length) {
        this.stats.garbage.length++;
        break;
      }
      valid = true;
      this.#rmtWnd = h.wnd;
      this.#onUna(h.una);
      if (h.cmd === CMD_ACK) {
        const rtt = seqDiff(ts32, h.ts);
        if (rtt >= 0 && rtt < 120_000) this.#updateRtt(rtt);
        this.#onAck(h.sn);
        if (maxAck < 0 || seqDiff(h.sn, maxAck) > 0) {
          maxAck = h.sn;
          maxAckTs = h.ts;
        }
      } else if (h.cmd === CMD_PUSH || h.cmd === CMD_PUSHF) {
        this.#onPush(h.cmd, h.sn, h.ts, datagram.subarray(off + SEG_HEADER, end));
      } else if (h.cmd === CMD_WASK) {
        this.#needWins = true;
        this.#ackNow = true;
      }
      off = end;
    }
    if (off < datagram.length && off + SEG_HEADER > datagram.length && valid) this.stats.garbage.short++;
    if (!valid) return;
    this.#lastRecvAt = now;
    if (maxAck >= 0) this.#onFastAck(maxAck, maxAckTs);
    const acked = seqDiff(this.#sndUna(), unaBefore);
    if (acked > 0) this.#onCumulativeAdvance(acked);
    if (this.#acks.length >= 2 * this.#cfg.ackEvery) this.#ackNow = true;
    if (this.#acks.length > 0 && this.#ackDueAt === Number.POSITIVE_INFINITY) {
      this.#ackDueAt = now + this.#cfg.ackDelayMs;
    }
    this.flush(false);
    this.#emitData();
    this.#maybeDrain();
    this.#maybeFinishEnd();
  }

  /**
   * Sends what can be sent now: pending ACKs (if due), window probes, new segments (a partial last segment
   * only when `tail`), fast and timed-out retransmissions. Then re-arms the single timer.
   */
  flush(tail = true): void {
    if (this.#closed || this.#flushing) return;
    this.#flushing = true;
    try {
      this.#flushInner(tail);
    } finally {
      this.#flushing = false;
    }
    if (this.#reentrant.length > 0) {
      const queued = this.#reentrant;
      this.#reentrant = [];
      for (const d of queued) this.input(d);
    }
    this.#arm();
  }

  #flushInner(tail: boolean): void {
    const now = this.#clock.now();
    const ts = now >>> 0;
    const wnd = this.#advertisedWnd();
    const una = this.#rcvNxt;
    if (this.#ackNow || now >= this.#ackDueAt || this.#wouldSend(tail, now)) {
      const acks = this.#acks;
      for (let i = 0; i < acks.length; i += 2) this.#put(CMD_ACK, wnd, acks[i + 1]!, acks[i]!, una, null);
      this.#acks = [];
      this.#ackNow = false;
      this.#ackDueAt = Number.POSITIVE_INFINITY;
    }
    if (this.#rmtWnd === 0 && this.#sq.bytes > 0) {
      if (this.#probeAt === 0) this.#probeAt = now + this.#probeWait;
      else if (now >= this.#probeAt) {
        this.#needWask = true;
        this.#probeWait = Math.min(this.#cfg.probeMaxMs, Math.ceil(this.#probeWait * 1.5));
        this.#probeAt = now + this.#probeWait;
      }
    } else {
      this.#probeAt = 0;
      this.#probeWait = this.#cfg.probeMinMs;
    }
    if (this.#needWask) {
      this.#put(CMD_WASK, wnd, ts, 0, una, null);
      this.stats.probesSent++;
      this.#needWask = false;
    }
    if (this.#needWins) {
      this.#put(CMD_WINS, wnd, ts, 0, una, null);
      this.#needWins = false;
    }
    // A datagram is going out anyway: let a partial last segment ride along.
    if (this.#dgLen > 0) tail = true;
    // new data
    const limit = this.#sendLimit();
    const mss = this.mss;
    // The dead-link clock starts when we begin waiting for an answer, not at the last packet of an idle link.
    if (this.inFlight === 0 && this.#sq.bytes > 0) this.#lastRecvAt = Math.max(this.#lastRecvAt, now);
    // Segments that timed out beyond the burst go first, as the window allows (pipe = unacked - lost).
    while (this.#lost.length > 0 && this.#unacked - this.#lostCount < limit) {
      const seg = this.#lost.shift()!;
      if (!seg.lost || seg.acked) continue;
      this.stats.retransmitsTimeout++;
      this.#transmit(seg, now, wnd, una);
    }
    while (this.#sq.bytes > 0 && this.#unacked - this.#lostCount < limit && (tail || this.#sq.bytes >= mss)) {
      const data = this.#sq.take(mss);
      const seg: OutSeg = {
        sn: this.#sndNxt,
        data,
        ts: 0,
        resendAt: 0,
        rto: this.#rto,
        xmit: 0,
        fastack: 0,
        acked: false,
        fastQueued: false,
        lost: false,
      };
      this.#unacked++;
      this.#sndNxt = (this.#sndNxt + 1) >>> 0;
      this.#sb.push(seg);
      this.#unackedBytes += data.length;
      this.#transmit(seg, now, wnd, una);
    }
    this.#tailDue = this.#sq.bytes > 0;
    // fast retransmits
    if (this.#fast.length > 0) {
      const fast = this.#fast;
      this.#fast = [];
      for (const seg of fast) {
        seg.fastQueued = false;
        if (seg.acked) continue;
        this.stats.retransmitsFast++;
        this.#transmit(seg, now, wnd, una);
      }
    }
    // timeouts
    if (now >= this.#nextResendAt) {
      let lost = false;
      let next = Number.POSITIVE_INFINITY;
      // With congestion control, resend only the first few expired segments now (like TCP's RTO, which
      // resends one); the others are queued as lost and go out as acknowledgements open the window.
      let burst = this.#cfg.congestionControl ? TIMEOUT_BURST : Number.POSITIVE_INFINITY;
      for (let i = this.#sbHead; i < this.#sb.length; i++) {
        const seg = this.#sb[i]!;
        if (seg.acked || seg.lost) continue;
        if (now >= seg.resendAt) {
          lost = true;
          seg.rto = Math.min(this.#cfg.maxRtoMs, seg.rto * 2);
          if (burst > 0) {
            burst--;
            this.stats.retransmitsTimeout++;
            this.#transmit(seg, now, wnd, una);
          } else {
            seg.lost = true;
            seg.resendAt = Number.POSITIVE_INFINITY;
            this.#lostCount++;
            this.#lost.push(seg);
            continue;
          }
        }
        if (seg.resendAt < next) next = seg.resendAt;
      }
      this.#nextResendAt = next;
      if (lost) this.#onTimeoutLoss();
    }
    this.#finishDatagram();
  }

  #wouldSend(tail: boolean, now: number): boolean {
    if (this.#fast.length > 0 || now >= this.#nextResendAt || this.#needWask || this.#needWins) return true;
    const pipeRoom = this.#unacked - this.#lostCount < this.#sendLimit();
    if (this.#lostCount > 0 && pipeRoom) return true;
    return this.#sq.bytes > 0 && pipeRoom && (tail || this.#sq.bytes >= this.mss);
  }

  #sendLimit(): number {
    let lim = Math.min(this.#cfg.sendWindow, this.#rmtWnd);
    if (this.#cfg.congestionControl) lim = Math.min(lim, Math.max(1, Math.floor(this.#cwnd)));
    return lim;
  }

  #transmit(seg: OutSeg, now: number, wnd: number, una: number): void {
    if (seg.lost) {
      seg.lost = false;
      this.#lostCount--;
    }
    seg.xmit++;
    seg.ts = now >>> 0;
    seg.fastack = 0;
    if (seg.xmit === 1) seg.rto = this.#rto;
    seg.resendAt = now + seg.rto;
    if (seg.resendAt < this.#nextResendAt) this.#nextResendAt = seg.resendAt;
    this.stats.segmentsSent++;
    const mss = this.mss;
    if (seg.data.length <= mss) {
      this.#put(CMD_PUSH, wnd, seg.ts, seg.sn, una, seg.data);
      return;
    }
    this.stats.fragmentedSends++;
    const piece = mss - FRAG_HEADER;
    for (let off = 0; off < seg.data.length; off += piece) {
      const part = seg.data.subarray(off, Math.min(seg.data.length, off + piece));
      this.#put(CMD_PUSHF, wnd, seg.ts, seg.sn, una, part, off, seg.data.length);
    }
  }

  /** Appends one segment to the datagram being built, sending it first if the segment does not fit. */
  #put(
    cmd: number,
    wnd: number,
    ts: number,
    sn: number,
    una: number,
    data: Buffer | null,
    fragOff = -1,
    fragTotal = 0,
  ): void {
    const extra = fragOff >= 0 ? FRAG_HEADER : 0;
    const dlen = (data ? data.length : 0) + extra;
    const need = SEG_HEADER + dlen;
    if (this.#dg && this.#dgLen + need > this.#dg.length) this.#finishDatagram();
    if (!this.#dg) {
      const spare = this.#spare;
      this.#spare = null;
      this.#dg = spare && spare.length === this.#mtu ? spare : Buffer.allocUnsafe(this.#mtu);
      this.#dgLen = 0;
    }
    const b = this.#dg;
    let o = this.#dgLen;
    b.writeUInt32LE(this.conv, o);
    b[o + 4] = cmd;
    b[o + 5] = 0;
    b.writeUInt16LE(wnd, o + 6);
    b.writeUInt32LE(ts >>> 0, o + 8);
    b.writeUInt32LE(sn >>> 0, o + 12);
    b.writeUInt32LE(una >>> 0, o + 16);
    b.writeUInt32LE(dlen, o + 20);
    o += SEG_HEADER;
    if (extra) {
      b.writeUInt16LE(fragOff, o);
      b.writeUInt16LE(fragTotal, o + 2);
      o += FRAG_HEADER;
    }
    if (data) o += data.copy(b, o);
    this.#dgLen = o;
  }

  #finishDatagram(): void {
    const dg = this.#dg;
    if (!dg || this.#dgLen === 0) return;
    let out: Buffer;
    if (this.#dgLen * 2 < dg.length && dg.length > 4096) {
      // Small datagram in a large (relay-MTU) buffer: copy it out and keep the buffer for the next one.
      out = Buffer.from(dg.subarray(0, this.#dgLen));
      this.#spare = dg;
    } else {
      out = dg.subarray(0, this.#dgLen);
    }
    this.#dg = null;
    this.#dgLen = 0;
    this.stats.datagramsOut++;
    this.stats.bytesOut += out.length;
    this.#output(out);
  }

  // ---------------------------------------------------------------- send-side acknowledgement
  #sndUna(): number {
    return this.#sbHead < this.#sb.length ? this.#sb[this.#sbHead]!.sn : this.#sndNxt;
  }

  #onUna(una: number): void {
    if (seqDiff(una, this.#sndNxt) > 0) return; // acknowledges data never sent: ignore
    while (this.#sbHead < this.#sb.length) {
      const seg = this.#sb[this.#sbHead]!;
      if (seqDiff(seg.sn, una) >= 0) break;
      this.#markAcked(seg);
      this.#sbHead++;
    }
    this.#trimAcked();
  }

  #onAck(sn: number): void {
    const idx = this.#sbHead + seqDiff(sn, this.#sndUna());
    if (idx < this.#sbHead || idx >= this.#sb.length) return;
    this.#markAcked(this.#sb[idx]!);
    this.#trimAcked();
  }

  #markAcked(seg: OutSeg): void {
    if (seg.acked) return;
    seg.acked = true;
    this.#unacked--;
    if (seg.lost) {
      seg.lost = false;
      this.#lostCount--;
    }
    this.#unackedBytes -= seg.data.length;
  }

  #trimAcked(): void {
    while (this.#sbHead < this.#sb.length && this.#sb[this.#sbHead]!.acked) this.#sbHead++;
    if (this.#sbHead === this.#sb.length) {
      this.#sb.length = 0;
      this.#sbHead = 0;
      this.#nextResendAt = Number.POSITIVE_INFINITY;
    } else if (this.#sbHead >= 1024 && this.#sbHead * 2 >= this.#sb.length) {
      this.#sb = this.#sb.slice(this.#sbHead);
      this.#sbHead = 0;
    }
  }

  #onFastAck(maxAck: number, ackTs: number): void {
    for (let i = this.#sbHead; i < this.#sb.length; i++) {
      const seg = this.#sb[i]!;
      if (seqDiff(seg.sn, maxAck) >= 0) break;
      if (seg.acked || seqDiff(ackTs, seg.ts) < 0) continue;
      seg.fastack++;
      if (seg.fastack >= this.#cfg.fastResend && seg.xmit < this.#cfg.fastLimit && !seg.fastQueued) {
        seg.fastQueued = true;
        this.#fast.push(seg);
        this.#onFastLoss();
      }
    }
  }

  // ---------------------------------------------------------------- congestion control
  #onCumulativeAdvance(n: number): void {
    if (this.#inRecovery && seqDiff(this.#sndUna(), this.#recoverSn) >= 0) this.#inRecovery = false;
    if (!this.#cfg.congestionControl) return;
    if (this.#cwnd < this.#ssthresh) this.#cwnd += n;
    else this.#cwnd += n / this.#cwnd;
    if (this.#cwnd > this.#cfg.sendWindow) this.#cwnd = this.#cfg.sendWindow;
  }

  #onFastLoss(): void {
    if (this.#inRecovery || !this.#cfg.congestionControl) return;
    this.#ssthresh = Math.max(4, Math.floor(this.inFlight / 2));
    this.#cwnd = this.#ssthresh + this.#cfg.fastResend;
    this.#enterRecovery();
  }

  #onTimeoutLoss(): void {
    if (!this.#cfg.congestionControl) return;
    if (!this.#inRecovery) this.#ssthresh = Math.max(4, Math.floor(this.inFlight / 2));
    this.#cwnd = 2;
    this.#enterRecovery();
  }

  #enterRecovery(): void {
    this.#inRecovery = true;
    this.#recoverSn = this.#sndNxt;
  }

  #updateRtt(rtt: number): void {
    if (this.#srtt === 0) {
      this.#srtt = Math.max(1, rtt);
      this.#rttvar = rtt / 2;
    } else {
      this.#rttvar = (3 * this.#rttvar + Math.abs(rtt - this.#srtt)) / 4;
      this.#srtt = Math.max(1, (7 * this.#srtt + rtt) / 8);
    }
    const rto = this.#srtt + Math.max(this.#cfg.ackDelayMs, 4 * this.#rttvar);
    this.#rto = Math.min(this.#cfg.maxRtoMs, Math.max(this.#cfg.minRtoMs, Math.ceil(rto)));
  }

  // ---------------------------------------------------------------- receive side
  #freeSlots(): number {
    return this.#cfg.recvWindow - (this.#deliver.length - this.#deliverHead);
  }

  #advertisedWnd(): number {
    const bytesFree = this.#cfg.recvBufferBytes - this.#oooBytes - this.#deliverBytes;
    const byBytes = Math.max(0, Math.floor(bytesFree / this.mss));
    return Math.max(0, Math.min(this.#freeSlots(), byBytes, 0xffff));
  }

  #onPush(cmd: number, sn: number, ts: number, data: Buffer): void {
    const d = seqDiff(sn, this.#rcvNxt);
    if (d < 0) {
      this.stats.dropped.duplicate++;
      this.#pushAck(sn, ts);
      this.#ackNow = true;
      return;
    }
    if (d >= this.#freeSlots()) {
      this.stats.dropped.window++;
      return;
    }
    const slot = (this.#ringHead + d) % this.#cfg.recvWindow;
    if (this.#ring[slot] !== undefined) {
      this.stats.dropped.duplicate++;
      this.#pushAck(sn, ts);
      this.#ackNow = true;
      return;
    }
    let seg = data;
    if (cmd === CMD_PUSHF) {
      const r = this.#reasm.add(sn, data);
      if (r.kind === 'malformed') {
        this.stats.garbage.fragment++;
        return;
      }
      if (r.kind === 'full') {
        this.stats.dropped.reassembly++;
        return;
      }
      if (r.kind === 'partial') return;
      seg = r.data;
    }
    if (seg.length === 0) {
      this.stats.garbage.length++;
      return;
    }
    if (this.#oooBytes + this.#deliverBytes + seg.length > this.#cfg.recvBufferBytes) {
      this.stats.dropped.bytes++;
      return;
    }
    this.#pushAck(sn, ts);
    if (d > 0) this.#ackNow = true;
    this.#ring[slot] = seg;
    this.#oooBytes += seg.length;
    while (this.#ring[this.#ringHead] !== undefined) {
      const b = this.#ring[this.#ringHead]!;
      this.#ring[this.#ringHead] = undefined;
      this.#ringHead = (this.#ringHead + 1) % this.#cfg.recvWindow;
      this.#rcvNxt = (this.#rcvNxt + 1) >>> 0;
      this.#oooBytes -= b.length;
      this.#deliver.push(b);
      this.#deliverBytes += b.length;
    }
    if (d === 0 && this.#reasm.size > 0) this.#reasm.dropBelow(this.#rcvNxt);
  }

  #pushAck(sn: number, ts: number): void {
    this.#acks.push(sn, ts);
  }

  #emitData(): void {
    if (this.#emitting) return;
    this.#emitting = true;
    try {
      while (!this.#paused && !this.#closed && this.#deliverHead < this.#deliver.length) {
        const b = this.#deliver[this.#deliverHead]!;
        this.#deliver[this.#deliverHead] = undefined as unknown as Buffer;
        this.#deliverHead++;
        this.#deliverBytes -= b.length;
        this.emit('data', b);
      }
      if (this.#deliverHead === this.#deliver.length) {
        this.#deliver.length = 0;
        this.#deliverHead = 0;
      } else if (this.#deliverHead >= 1024) {
        this.#deliver = this.#deliver.slice(this.#deliverHead);
        this.#deliverHead = 0;
      }
    } finally {
      this.#emitting = false;
    }
  }

  // ---------------------------------------------------------------- timers and lifecycle
  #arm(): void {
    if (this.#closed) return;
    let at = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    if (this.#tailDue && this.#sq.bytes > 0 && this.#unacked - this.#lostCount < this.#sendLimit()) {
      if (!this.#defer) at = now;
      else if (!this.#deferred) {
        this.#deferred = true;
        this.#defer(this.#onDeferred);
      }
    }
    if (this.#acks.length > 0) at = Math.min(at, this.#ackDueAt);
    if (this.inFlight > 0) {
      at = Math.min(at, this.#nextResendAt, this.#lastRecvAt + this.#cfg.deadLinkMs);
    }
    if (this.#probeAt > 0) at = Math.min(at, this.#probeAt);
    else if (this.#rmtWnd === 0 && this.#sq.bytes > 0) at = Math.min(at, now + this.#probeWait);
    // Keep a timer that fires no later than needed: firing early only costs a re-arm, while replacing
    // the timer on every flush would churn the clock.
    if (this.#timer && this.#timerAt <= at) return;
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerAt = at;
    if (at === Number.POSITIVE_INFINITY) return;
    this.#timer = this.#clock.setTimer(Math.max(0, at - now), () => this.#onTimer());
  }

  readonly #onDeferred = (): void => {
    this.#deferred = false;
    if (!this.#closed) this.flush(true);
  };

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    if (this.#closed) return;
    const now = this.#clock.now();
    if (this.inFlight > 0 && now - this.#lastRecvAt >= this.#cfg.deadLinkMs) {
      this.close(
        new TunnelError(
          'TIMEOUT',
          `arq conv ${this.conv}: no answer from the peer for ${this.#cfg.deadLinkMs} ms (dead link)`,
        ),
      );
      return;
    }
    if (this.#rmtWnd === 0 && this.#sq.bytes > 0 && this.#probeAt === 0) this.#probeAt = now;
    this.flush(true);
    this.#maybeFinishEnd();
  }

  #maybeDrain(): void {
    if (this.#needDrain && !this.#closed && this.bufferedBytes <= this.#cfg.sendHighWater) {
      this.#needDrain = false;
      this.emit('drain');
    }
  }

  #maybeFinishEnd(): void {
    if (this.#ending && !this.#closed && this.bufferedBytes === 0) this.close();
  }
}
