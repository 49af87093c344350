/**
 * A reliable, ordered byte stream over an unreliable datagram path (the KCP design, stream mode):
 * sequence numbers, cumulative una + per-segment selective ACKs, fast retransmit, RTO from measured RTT,
 * send/receive windows, TCP-like congestion control, delayed ACKs, zero-window probing, dead-link detection.
 *
 * Ownership: write() keeps references to the given buffers until their bytes are cut into segments (copied
 * into buffers of their own, pooled when large: send-queue.ts); input() keeps views into the given datagram
 * (delivered data are views into it). Neither buffer may be reused by the caller. Datagrams handed to
 * output() may come from a pool (datagram-writer.ts): only the bottom of the send path gives them back.
 * Events: 'data' (Buffer, in order), 'drain', 'error' (TunnelError; only if someone listens), 'close' (err?),
 * 'silent' (a retransmission timeout came while nothing at all had arrived from the peer for half an RTO or more:
 * the path may have died; emitted once until the next datagram arrives, before that timeout's resends go out, so a
 * listener that moves the path moves them too).
 * Fed inside a receive run (receive-run.ts: a GRO read's datagrams), the session flushes once at the run's end, so
 * the run's ACKs leave together; fast retransmit counts the acknowledged segments above a hole, not the ACK
 * datagrams, so fewer of them find a loss as soon.
 */
import { randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Clock, TimerHandle } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import { type BufferPool, POOLED_MIN_BYTES, poolFor } from '../buffers/buffer-pool.js';
import { sendRun } from '../buffers/send-run.js';
import {
  type ArqConfig,
  type ArqOptions,
  type ArqStats,
  checkMtu,
  newArqStats,
  resolveArqConfig,
} from './arq-options.js';
import { Congestion, RttEstimator } from './congestion.js';
import { DatagramWriter, type SegmentFields } from './datagram-writer.js';
import { InflightCap } from './inflight-cap.js';
import { type AckPolicy, PendingAcks } from './pending-acks.js';
import { type ReceiveRun, type RunFlushable, receiveRun } from './receive-run.js';
import { RecvWindow } from './recv-window.js';
import {
  ACK_DELAY_BYTES,
  CMD_ACK,
  CMD_PUSH,
  CMD_PUSHF,
  CMD_WASK,
  CMD_WINS,
  FRAG_HEADER,
  isKnownCmd,
  MAX_SEGMENT_DATA,
  readAckDelayMs,
  readHeader,
  SEG_HEADER,
  type SegmentHeader,
  seqDiff,
  writeAckDelay,
} from './segment.js';
import { SendQueue } from './send-queue.js';
import { type OutSeg, SendWindow } from './send-window.js';

/** Segments resent at once when a retransmission timeout fires; the rest wait for window room. */
const TIMEOUT_BURST = 2;
/** Datagrams queued when input() is re-entered from output(); beyond this they are dropped and counted. */
const MAX_REENTRANT = 1024;
/**
 * Units of the ts field per millisecond. The ts a sender puts in PUSH segments is only echoed by the
 * receiver, so its unit is the sender's choice: 1/16 ms gives RTT samples fine enough for the in-flight
 * cap's minimum RTT on loopback-scale paths, and the u32 still spans 74 hours (differences are modulo 2^32).
 */
const TS_PER_MS = 16;
const tsAt = (now: number): number => Math.floor(now * TS_PER_MS) >>> 0;
/** The in-flight cap never goes below this many full segments (enough to keep a pipeline of processes busy). */
const INFLIGHT_FLOOR_SEGMENTS = 4;

export interface ArqPoolOptions {
  /** Where segment and datagram buffers of a size come from (default: the process-wide pools, poolFor). */
  pools?: (size: number) => BufferPool;
}

export class ArqSession extends EventEmitter {
  readonly conv: number;
  /** Tag sent in every segment; a peer that sees it change knows this side restarted. */
  readonly incarnation: number;
  readonly stats: ArqStats = newArqStats();
  readonly #config: ArqConfig;
  readonly #clock: Clock;
  readonly #defer: ((fn: () => void) => void) | undefined;
  #closed = false;
  #ending = false;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #deferred = false;
  // send side
  readonly #sendQueue = new SendQueue();
  readonly #sendWindow: SendWindow;
  readonly #congestion: Congestion;
  readonly #cap: InflightCap;
  readonly #rtt: RttEstimator;
  #remoteWindow: number;
  #fast: OutSeg[] = [];
  #needDrain = false;
  #tailDue = false;
  #probeAt = 0;
  #probeWait: number;
  #needWask = false;
  #needWins = false;
  // receive side
  readonly #recvWindow: RecvWindow;
  #paused = false;
  #emitting = false;
  readonly #acks: PendingAcks;
  /** The data of the ACK segment being put (its delay), reused. */
  readonly #ackData = Buffer.alloc(ACK_DELAY_BYTES);
  #lastRecvAt: number;
  /** 'silent' was emitted and no datagram arrived since. */
  #silentNoted = false;
  #flushing = false;
  #reentrant: Buffer[] = [];
  readonly #header: SegmentHeader = { conv: 0, cmd: 0, inc: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
  #peerInc = 0;
  readonly #writer: DatagramWriter;
  /** The header fields of the segment being put: one object reused for every put (no allocation per segment). */
  readonly #fields: SegmentFields = { cmd: 0, wnd: 0, ts: 0, sn: 0, una: 0, fragOffset: -1, fragTotal: 0 };
  readonly #pools: (size: number) => BufferPool;
  readonly #run: ReceiveRun | null;
  /** The sns acknowledged by the datagram being handled (reused). */
  readonly #ackedSns: number[] = [];
  /** What the receive run flushes at its end (one object per session). */
  readonly #runFlush: RunFlushable = { flushRun: () => this.flush(false) };

  constructor(opts: ArqOptions & ArqPoolOptions) {
    super();
    const cfg = resolveArqConfig(opts);
    this.#config = cfg;
    this.conv = opts.conv;
    this.#clock = opts.clock;
    this.incarnation = opts.incarnation ?? randomInt(1, 256);
    this.#pools = opts.pools ?? poolFor;
    this.#writer = new DatagramWriter({
      conv: opts.conv,
      incarnation: this.incarnation,
      mtu: opts.mtu,
      output: opts.output,
      stats: this.stats,
      headroom: opts.headroom ?? 0,
      tailroom: opts.tailroom ?? 0,
      pools: this.#pools,
    });
    this.#defer = opts.defer;
    this.#run = opts.run === undefined ? receiveRun : opts.run;
    this.#remoteWindow = cfg.recvWindow;
    this.#sendWindow = new SendWindow(cfg.initialSn);
    this.#recvWindow = new RecvWindow(cfg.recvWindow, cfg.recvBufferBytes, cfg.maxReassembly, cfg.initialSn);
    this.#congestion = new Congestion(cfg.congestionControl, cfg.initialCwnd, cfg.sendWindow);
    this.#cap = new InflightCap(cfg.queueTargetMs, INFLIGHT_FLOOR_SEGMENTS * (opts.mtu - SEG_HEADER));
    this.#rtt = new RttEstimator(cfg.initialRtoMs, cfg.minRtoMs, cfg.maxRtoMs, cfg.ackDelayMs);
    this.#probeWait = cfg.probeMinMs;
    this.#lastRecvAt = this.#clock.now();
    this.#acks = new PendingAcks({
      ackEvery: cfg.ackEvery,
      ackDelayMs: cfg.ackDelayMs,
      holdShort: cfg.holdShort,
    });
  }

  get mtu(): number {
    return this.#writer.mtu;
  }
  get mss(): number {
    return this.#writer.mtu - SEG_HEADER;
  }
  get closed(): boolean {
    return this.#closed;
  }
  /**
   * write() while writable; once end() or close() was called the bytes are dropped and true returned (the
   * session is over: nothing would carry them). One function per session, for a writer that holds it.
   */
  readonly writeWhileOpen = (bytes: Uint8Array): boolean => (this.writable ? this.write(bytes) : true);

  /** False once end() or close() was called: write() would throw. */
  get writable(): boolean {
    return !this.#closed && !this.#ending;
  }
  /** Bytes written and not yet acknowledged. */
  get bufferedBytes(): number {
    return this.#sendQueue.bytes + this.#sendWindow.unackedBytes;
  }
  get rtoMs(): number {
    return this.#rtt.rto;
  }
  get srttMs(): number {
    return this.#rtt.srtt;
  }
  get cwnd(): number {
    return this.#congestion.cwnd;
  }
  /** The cap on unacknowledged bytes (Infinity when queueTargetMs is 0 or before it is measured). */
  get inflightCap(): number {
    return this.#cap.bytes;
  }
  get queueTargetMs(): number {
    return this.#cap.targetMs;
  }
  /** Bytes written and not yet sent. */
  get notSentBytes(): number {
    return this.#sendQueue.bytes;
  }
  /** Bytes held by the receive side: out-of-order, undelivered and partially reassembled segments. */
  get recvHeldBytes(): number {
    return this.#recvWindow.heldBytes;
  }
  /** Segments between una and the next sn to send. */
  get inFlight(): number {
    return this.#sendWindow.inFlight;
  }

  /** How this side acknowledges now (pending-acks.ts). */
  get ackPolicy(): AckPolicy {
    return this.#acks.policy;
  }

  /**
   * Acknowledges by `policy` from now on, ACKs already pending included (they go at once if the new policy
   * says they are due). Throws BAD_CONFIG for a bad policy.
   */
  setAckPolicy(policy: AckPolicy): void {
    this.#acks.setPolicy(policy);
    if (!this.#closed && this.#acks.count > 0) {
      if (this.#acks.due(this.#clock.now())) this.flush(false);
      else this.#arm();
    }
  }

  /**
   * Holds about `ms` of data queued in front of the path from now on (the in-flight cap, inflight-cap.ts; 0
   * turns the cap off). Throws BAD_CONFIG for a negative or non-finite value.
   */
  setQueueTarget(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new TunnelError('BAD_CONFIG', `arq queueTargetMs: ${ms} is not a non-negative number`);
    }
    if (ms === this.#cap.targetMs) return; // a path change that kept the kind (an MTU step)
    this.#cap.setTarget(ms);
    if (!this.#closed) this.flush(false);
  }

  /** Changes the datagram size from now on; segments already in flight that no longer fit are fragmented. */
  setMtu(mtu: number): void {
    checkMtu(mtu);
    this.#writer.finish();
    this.#writer.mtu = mtu;
  }

  write(bytes: Uint8Array): boolean {
    if (this.#closed || this.#ending) {
      throw new TunnelError('CLOSED', `arq conv ${this.conv}: write after close`);
    }
    const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#sendQueue.push(b);
    if (this.#sendQueue.bytes >= this.mss) this.flush(false);
    if (this.#sendQueue.bytes > 0 && !this.#tailDue) {
      this.#tailDue = true;
      this.#arm();
    }
    const ok = this.#writableNow();
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
    const wasShut = this.#recvWindow.advertised(this.mss) === 0;
    this.#emitData();
    if (wasShut && !this.#closed && this.#recvWindow.advertised(this.mss) > 0) {
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
    this.#sendQueue.clear();
    this.#sendWindow.clear();
    this.#recvWindow.clear();
    this.#acks.clear();
    this.#fast = [];
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
      // Called back from inside output() (a synchronous path): handled after this flush, bounded.
      if (this.#reentrant.length < MAX_REENTRANT) this.#reentrant.push(datagram);
      else this.stats.dropped.reentrant++;
      return;
    }
    this.stats.datagramsIn++;
    this.stats.bytesIn += datagram.length;
    const h = this.#header;
    const now = this.#clock.now();
    const ts32 = tsAt(now);
    const unaBefore = this.#sendWindow.una;
    let valid = false;
    const acked = this.#ackedSns;
    acked.length = 0;
    let maxAck = 0;
    let maxAckTs = 0;
    let off = 0;
    for (; off + SEG_HEADER <= datagram.length; off += SEG_HEADER + h.len) {
      readHeader(datagram, off, h);
      if (h.conv !== this.conv) {
        this.stats.garbage.conv++;
        break;
      }
      if (!isKnownCmd(h.cmd)) {
        this.stats.garbage.cmd++;
        break;
      }
      if (h.len > MAX_SEGMENT_DATA || off + SEG_HEADER + h.len > datagram.length) {
        this.stats.garbage.length++;
        break;
      }
      if (h.inc !== 0 && h.inc !== this.#peerInc) {
        if (this.#peerInc !== 0) {
          // Same conv, new tag: the peer's session object was replaced (restart); our state is meaningless.
          this.close(new TunnelError('CLOSED', `arq conv ${this.conv}: the peer restarted its session`));
          return;
        }
        this.#peerInc = h.inc ?? 0;
      }
      valid = true;
      this.#remoteWindow = h.wnd;
      this.#sendWindow.onUna(h.una);
      if (h.cmd === CMD_ACK) {
        const rtt = seqDiff(ts32, h.ts) / TS_PER_MS;
        if (rtt >= 0 && rtt < 120_000) {
          // The time the peer held the ACK is not path delay (it never exceeds the round trip it is part of).
          const sample = Math.max(0, rtt - readAckDelayMs(datagram, off, h.len));
          this.#rtt.sample(sample);
          this.#cap.onRttSample(sample, now);
        }
        this.#sendWindow.onAck(h.sn);
        if (acked.length === 0 || seqDiff(h.sn, maxAck) > 0) {
          maxAck = h.sn;
          maxAckTs = h.ts;
        }
        acked.push(h.sn);
      } else if (h.cmd === CMD_PUSH || h.cmd === CMD_PUSHF) {
        this.#onPush(h, datagram.subarray(off + SEG_HEADER, off + SEG_HEADER + h.len), now);
      } else if (h.cmd === CMD_WASK) {
        this.#needWins = true;
        this.#acks.ackNow();
      }
    }
    if (off < datagram.length && off + SEG_HEADER > datagram.length) this.stats.garbage.short++;
    if (!valid) return;
    this.#lastRecvAt = now;
    this.#silentNoted = false;
    if (acked.length > 0) {
      const { fastResend, fastLimit } = this.#config;
      acked.sort(seqDiff);
      if (this.#sendWindow.fastScan(acked, maxAckTs, fastResend, fastLimit, this.#fast) > 0) {
        this.#congestion.onFastLoss(this.#sendWindow.inFlight, this.#sendWindow.sndNxt, fastResend);
      }
    }
    const advanced = seqDiff(this.#sendWindow.una, unaBefore);
    if (advanced > 0) {
      this.#congestion.onAdvance(advanced, this.#sendWindow.una);
      this.#cap.onAdvance(this.#sendWindow.una, this.#sendWindow.sndNxt, this.#sendWindow.delivered, now);
    }
    // A sender held by our small window must not also wait for our ACK delay.
    const acks = this.#acks;
    if (acks.count > 0 && this.#recvWindow.advertised(this.mss) < 2 * acks.ackEvery) acks.ackNow();
    // Inside a receive run (a GRO read) the run's datagrams are owed one flush, at its end.
    if (!this.#run?.defer(this.#runFlush)) this.flush(false);
    this.#emitData();
    this.#maybeDrain();
    this.#maybeFinishEnd();
  }

  /**
   * Sends what can be sent now: pending ACKs (if due), window probes, lost and new segments (a partial last
   * segment only when `tail` or when a datagram goes out anyway), fast and timed-out retransmissions.
   */
  flush(tail = true): void {
    if (this.#closed || this.#flushing) return;
    this.#flushing = true;
    try {
      // The datagrams of one flush leave as one send run (a WireGuard peer seals them in one call).
      sendRun.within(() => this.#flushInner(tail));
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

  #flushInner(tailAsked: boolean): void {
    const now = this.#clock.now();
    const wnd = this.#recvWindow.advertised(this.mss);
    const una = this.#recvWindow.rcvNxt;
    const acks = this.#acks;
    if (acks.due(now) || (acks.count > 0 && this.#wouldSend(tailAsked, now))) {
      this.#segmentFields(CMD_ACK, wnd, una);
      acks.take(now, this.#putAck, una);
    }
    this.#probe(now, wnd, una);
    // A datagram is going out anyway: let a partial last segment ride along.
    const tail = tailAsked || this.#writer.pending > 0;
    const limit = this.#congestion.limit(this.#remoteWindow);
    const sw = this.#sendWindow;
    // The dead-link clock starts when we begin waiting for an answer, not at the last packet of an idle link.
    if (sw.inFlight === 0 && this.#sendQueue.bytes > 0) this.#lastRecvAt = Math.max(this.#lastRecvAt, now);
    // Segments that timed out beyond the burst go first, as the window allows.
    for (let seg = sw.pipe < limit ? sw.nextLost() : undefined; seg; ) {
      this.stats.retransmitsTimeout++;
      this.#transmit(seg, now, wnd, una);
      seg = sw.pipe < limit ? sw.nextLost() : undefined;
    }
    const mss = this.mss;
    // Segments of their own, from the pool of datagram-sized buffers (one free list for both).
    const size = this.#writer.bufferSize;
    const pool =
      this.#sendQueue.bytes >= POOLED_MIN_BYTES && size >= POOLED_MIN_BYTES ? this.#pools(size) : null;
    let sentNew = false;
    while (this.#sendQueue.bytes > 0 && this.#roomToSend() && (tail || this.#sendQueue.bytes >= mss)) {
      this.#transmit(sw.add(this.#sendQueue.take(mss, pool), this.#rtt.rto, pool), now, wnd, una);
      sentNew = true;
    }
    this.#tailDue = this.#sendQueue.bytes > 0;
    if (sentNew && this.#tailDue) this.#askForAcks(now, wnd, una);
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
    if (now >= sw.nextResendAt) {
      this.#noteSilence(now);
      // With congestion control only the first few expired segments go now (TCP resends one); the others
      // are marked lost and resent above as acknowledgements open the window.
      const burst = this.#config.congestionControl ? TIMEOUT_BURST : Number.POSITIVE_INFINITY;
      const { resend, expired } = sw.expire(now, this.#config.maxRtoMs, burst);
      for (const seg of resend) {
        this.stats.retransmitsTimeout++;
        this.#transmit(seg, now, wnd, una);
      }
      if (expired) this.#congestion.onTimeout(sw.inFlight, sw.sndNxt);
    }
    this.#writer.finish();
  }

  /** A resend is due and nothing arrived for half an RTO or more: 'silent', once until the next datagram. */
  #noteSilence(now: number): void {
    if (this.#silentNoted || this.#sendWindow.inFlight === 0) return;
    if (now - this.#lastRecvAt < this.#rtt.rto / 2) return;
    this.#silentNoted = true;
    this.stats.silences++;
    this.emit('silent');
  }

  /** Zero-window probing: WASK after probeWait (x1.5 each time) while the peer advertises 0 and data waits. */
  #probe(now: number, wnd: number, una: number): void {
    if (this.#remoteWindow === 0 && this.#sendQueue.bytes > 0) {
      if (this.#probeAt === 0) this.#probeAt = now + this.#probeWait;
      else if (now >= this.#probeAt) {
        this.#needWask = true;
        this.#probeWait = Math.min(this.#config.probeMaxMs, Math.ceil(this.#probeWait * 1.5));
        this.#probeAt = now + this.#probeWait;
      }
    } else {
      this.#probeAt = 0;
      this.#probeWait = this.#config.probeMinMs;
    }
    if (this.#needWask) {
      const fields = this.#segmentFields(CMD_WASK, wnd, una);
      fields.ts = tsAt(now);
      this.#writer.put(fields, null);
      this.stats.probesSent++;
      this.#needWask = false;
    }
    if (this.#needWins) {
      const fields = this.#segmentFields(CMD_WINS, wnd, una);
      fields.ts = tsAt(now);
      this.#writer.put(fields, null);
      this.#needWins = false;
    }
  }

  /**
   * New data just went out and the window is full again with more waiting. If the window is so small that the
   * peer may not collect `ackEvery` segments to acknowledge at once, it would hold its ACKs for its delay while
   * this side waits for them: a WASK behind the data makes it answer at once (with its ACKs and a WINS).
   */
  #askForAcks(now: number, wnd: number, una: number): void {
    const ackEvery = this.#acks.ackEvery;
    if (ackEvery <= 1 || this.#roomToSend() || this.#sendWindow.pipe >= 2 * ackEvery) return;
    const fields = this.#segmentFields(CMD_WASK, wnd, una);
    fields.ts = tsAt(now);
    this.#writer.put(fields, null);
    this.stats.ackAsks++;
  }

  #wouldSend(tail: boolean, now: number): boolean {
    const sw = this.#sendWindow;
    if (this.#fast.length > 0 || now >= sw.nextResendAt || this.#needWask || this.#needWins) return true;
    if (sw.lostCount > 0 && sw.pipe < this.#congestion.limit(this.#remoteWindow)) return true;
    const room = this.#roomToSend();
    return this.#sendQueue.bytes > 0 && room && (tail || this.#sendQueue.bytes >= this.mss);
  }

  /** Whether a new segment may go now: congestion and peer windows, and the in-flight cap. */
  #roomToSend(): boolean {
    const sw = this.#sendWindow;
    return sw.pipe < this.#congestion.limit(this.#remoteWindow) && sw.unackedBytes < this.#cap.bytes;
  }

  #transmit(seg: OutSeg, now: number, wnd: number, una: number): void {
    this.#sendWindow.sent(seg, now, tsAt(now));
    this.stats.segmentsSent++;
    const mss = this.mss;
    if (seg.len <= mss) {
      const fields = this.#segmentFields(CMD_PUSH, wnd, una);
      fields.ts = seg.ts;
      fields.sn = seg.sn;
      this.#writer.put(fields, seg.data);
      return;
    }
    this.stats.fragmentedSends++;
    const piece = mss - FRAG_HEADER;
    // Rare (the MTU shrank under segments in flight): cut pieces out of the segment's buffer.
    const data = seg.data;
    const fields = this.#segmentFields(CMD_PUSHF, wnd, una);
    fields.ts = seg.ts;
    fields.sn = seg.sn;
    fields.fragTotal = data.length;
    for (let off = 0; off < data.length; off += piece) {
      fields.fragOffset = off;
      this.#writer.put(fields, data.subarray(off, Math.min(data.length, off + piece)));
    }
  }

  /** The reused header fields set for a segment of `cmd` (timestamp and sequence number 0, not a piece). */
  #segmentFields(cmd: number, wnd: number, una: number): SegmentFields {
    const fields = this.#fields;
    fields.cmd = cmd;
    fields.wnd = wnd;
    fields.una = una;
    fields.ts = 0;
    fields.sn = 0;
    fields.fragOffset = -1;
    fields.fragTotal = 0;
    return fields;
  }

  /** Puts one ACK segment (the fields were set for CMD_ACK), with the time it was held. */
  readonly #putAck = (sn: number, ts: number, heldMs: number): void => {
    const fields = this.#fields;
    fields.sn = sn;
    fields.ts = ts;
    writeAckDelay(this.#ackData, heldMs);
    this.#writer.put(fields, this.#ackData);
  };

  #onPush(h: SegmentHeader, data: Buffer, now: number): void {
    const acks = this.#acks;
    const rcvNxt = this.#recvWindow.rcvNxt;
    switch (this.#recvWindow.push(h.cmd, h.sn, data)) {
      case 'stored':
        // Held by the policy, a short segment's too: the sender has no more now, but this side's reply (or the
        // next request of an exchange) usually goes within the delay and carries the ACK. One that fills a hole
        // goes at once: the sender's window waits on it.
        acks.add(h.sn, h.ts, now, data.length < this.mss);
        if (seqDiff(this.#recvWindow.rcvNxt, rcvNxt) > 1) acks.ackNow();
        return;
      case 'stored-out-of-order':
        acks.add(h.sn, h.ts, now);
        acks.ackNow(); // a gap: tell the sender at once (fast retransmit)
        return;
      case 'duplicate':
        this.stats.dropped.duplicate++;
        acks.add(h.sn, h.ts, now);
        acks.ackNow();
        return;
      case 'window':
        this.stats.dropped.window++;
        return;
      case 'bytes':
        this.stats.dropped.bytes++;
        return;
      case 'reassembly-full':
        this.stats.dropped.reassembly++;
        return;
      case 'malformed':
        this.stats.garbage.fragment++;
        return;
      case 'empty':
        this.stats.garbage.length++;
        return;
      case 'partial':
        return;
    }
  }

  #emitData(): void {
    if (this.#emitting) return;
    this.#emitting = true;
    try {
      while (!this.#paused && !this.#closed) {
        const b = this.#recvWindow.shift();
        if (!b) break;
        this.emit('data', b);
      }
    } finally {
      this.#emitting = false;
    }
  }

  /** One clock timer for the earliest of: partial segment, ACK delay, resend, dead link, window probe. */
  #arm(): void {
    if (this.#closed) return;
    let at = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    const sw = this.#sendWindow;
    if (this.#tailDue && this.#sendQueue.bytes > 0 && this.#roomToSend()) {
      if (!this.#defer) at = now;
      else if (!this.#deferred) {
        this.#deferred = true;
        this.#defer(this.#onDeferred);
      }
    }
    at = Math.min(at, this.#acks.dueAt);
    if (sw.inFlight > 0) at = Math.min(at, sw.nextResendAt, this.#lastRecvAt + this.#config.deadLinkMs);
    if (this.#probeAt > 0) at = Math.min(at, this.#probeAt);
    else if (this.#remoteWindow === 0 && this.#sendQueue.bytes > 0) at = Math.min(at, now + this.#probeWait);
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
    if (this.#closed) return;
    this.flush(true);
    this.#maybeDrain();
  };

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    if (this.#closed) return;
    const now = this.#clock.now();
    const dead = this.#config.deadLinkMs;
    if (this.#sendWindow.inFlight > 0 && now - this.#lastRecvAt >= dead) {
      const msg = `arq conv ${this.conv}: no answer from the peer for ${dead} ms (dead link)`;
      this.close(new TunnelError('TIMEOUT', msg));
      return;
    }
    if (this.#remoteWindow === 0 && this.#sendQueue.bytes > 0 && this.#probeAt === 0) this.#probeAt = now;
    this.flush(true);
    this.#maybeDrain();
    this.#maybeFinishEnd();
  }

  #writableNow(): boolean {
    return (
      this.bufferedBytes <= this.#config.sendHighWater &&
      this.#sendQueue.bytes <= this.#config.notSentLowWater
    );
  }

  #maybeDrain(): void {
    if (this.#needDrain && !this.#closed && this.#writableNow()) {
      this.#needDrain = false;
      this.emit('drain');
    }
  }

  #maybeFinishEnd(): void {
    if (this.#ending && !this.#closed && this.bufferedBytes === 0) this.close();
  }
}
