/** Options, defaults and counters of an ArqSession. Every cap and timer is listed in docs/LIMITS.md. */
import type { Clock } from '../../clock.js';
import { TunnelError } from '../../errors.js';
import type { ReceiveRun } from './receive-run.js';
import { MAX_MTU, MIN_MTU } from './segment.js';

export interface ArqOptions {
  /** Session id carried in every segment (u32). */
  conv: number;
  /** Largest datagram handed to `output`, header included. Changeable later with setMtu(). */
  mtu: number;
  clock: Clock;
  /** Sends one datagram. The session does not touch the buffer afterwards. Must not throw. */
  output(datagram: Buffer): void;
  /**
   * Runs `fn` soon (after the current batch of writes), to send a partial last segment. Default: a 0 ms
   * clock timer. Pass setImmediate in production to avoid the timer's ~1 ms granularity.
   */
  defer?: (fn: () => void) => void;
  /**
   * The receive run a datagram may arrive in (receive-run.ts): fed inside one, the session flushes once at the
   * run's end instead of after each datagram. Default: the process's; null: after each datagram.
   */
  run?: ReceiveRun | null;
  /** Send window in segments (default 2048). */
  sendWindow?: number;
  /** Receive window in segments (default 2048). */
  recvWindow?: number;
  /** Cap on bytes held by the receiver: out-of-order segments plus undelivered in-order ones (default 32 MiB). */
  recvBufferBytes?: number;
  /** write() returns false once queued + unacknowledged bytes exceed this (default 8 MiB). */
  sendHighWater?: number;
  /**
   * write() also returns false once the bytes written but not yet sent exceed this (default 64 KiB), like
   * TCP_NOTSENT_LOWAT: the writer (the mux, with its per-stream queues and round robin) keeps the backlog, so
   * a new stream's bytes never wait behind megabytes of another's.
   */
  notSentLowWater?: number;
  /**
   * Caps the bytes in flight at maxDeliveryRate x (2 x minRtt + this many ms), at least 4 segments
   * (inflight-cap.ts). 0 = off (default; only the loss-based window limits). Meant for paths that queue
   * instead of dropping (the relay's TCP), where it bounds how long new bytes wait behind a bulk transfer.
   * Changeable with setQueueTarget().
   */
  queueTargetMs?: number;
  /** Longest delay before a pending ACK is sent (default 10 ms, at most 60,000). Changeable with setAckPolicy(). */
  ackDelayMs?: number;
  /** A short segment's ACK waits the delay whatever ackEvery says (default false; pending-acks.ts). */
  holdShort?: boolean;
  /**
   * Send ACKs at once when this many are pending (default 2, like TCP's every-second-segment rule).
   * Changeable with setAckPolicy() (pending-acks.ts).
   */
  ackEvery?: number;
  initialRtoMs?: number;
  minRtoMs?: number;
  maxRtoMs?: number;
  /** Duplicate-ack count (later segments acknowledged) that triggers a fast retransmit (default 2). */
  fastResend?: number;
  /** A segment is fast-retransmitted at most while its transmissions are below this (default 5). */
  fastLimit?: number;
  /** TCP-like congestion control (default true). false = window limited only by the windows (KCP nc=1). */
  congestionControl?: boolean;
  /** Initial congestion window in segments (default 16). */
  initialCwnd?: number;
  /** Close with TIMEOUT when data is unacknowledged and nothing valid arrived for this long (default 30 s). */
  deadLinkMs?: number;
  /** First zero-window probe delay, grown x1.5 per probe up to probeMaxMs (defaults 500 ms, 10 s). */
  probeMinMs?: number;
  probeMaxMs?: number;
  /** First sequence number of both directions; both ends must use the same value (default 0; tests use it to cross the u32 wrap). */
  initialSn?: number;
  /**
   * This session's incarnation tag, 1..255, sent in every segment (default: random). If the peer's tag changes
   * mid-session the peer restarted: the session closes with CLOSED so that a new one can be set up.
   */
  incarnation?: number;
  /** Cap on partially reassembled PUSHF segments (default 64). */
  maxReassembly?: number;
  /**
   * Free bytes reserved before / after every datagram for the headers and trailers of the layers below
   * (0..1024 each, default 0). The datagram is then handed to `output` as a view granted that room
   * (shared/net/buffers/packet-room.ts), and the layers below write into it instead of copying.
   */
  headroom?: number;
  tailroom?: number;
}

export type ArqConfig = Required<
  Omit<
    ArqOptions,
    'clock' | 'output' | 'conv' | 'mtu' | 'defer' | 'run' | 'incarnation' | 'headroom' | 'tailroom'
  >
>;

export const ARQ_DEFAULTS: ArqConfig = {
  sendWindow: 2048,
  recvWindow: 2048,
  recvBufferBytes: 32 * 1024 * 1024,
  sendHighWater: 8 * 1024 * 1024,
  notSentLowWater: 64 * 1024,
  queueTargetMs: 0,
  ackDelayMs: 10,
  holdShort: false,
  ackEvery: 2,
  initialRtoMs: 300,
  minRtoMs: 100,
  maxRtoMs: 5_000,
  fastResend: 2,
  fastLimit: 5,
  congestionControl: true,
  initialCwnd: 16,
  deadLinkMs: 30_000,
  probeMinMs: 500,
  probeMaxMs: 10_000,
  maxReassembly: 64,
  initialSn: 0,
};

/** Hard bounds on the window options (a u16 wnd field carries the receive window). */
export const MAX_WINDOW = 65_535;

export function resolveArqConfig(opts: ArqOptions): ArqConfig {
  const cfg = { ...ARQ_DEFAULTS };
  for (const k of Object.keys(ARQ_DEFAULTS) as (keyof ArqConfig)[]) {
    const v = opts[k];
    if (v !== undefined) (cfg as Record<string, unknown>)[k] = v;
  }
  for (const [k, v] of Object.entries(cfg)) {
    if (typeof v === 'number' && (!Number.isFinite(v) || v < 0)) {
      throw new TunnelError('BAD_CONFIG', `arq ${k}: ${v} is not a non-negative number`);
    }
  }
  checkRange('sendWindow', cfg.sendWindow, 1, MAX_WINDOW);
  checkRange('recvWindow', cfg.recvWindow, 1, MAX_WINDOW);
  checkRange('ackEvery', cfg.ackEvery, 1, 1024);
  checkRange('fastResend', cfg.fastResend, 1, 1000);
  checkRange('initialCwnd', cfg.initialCwnd, 1, MAX_WINDOW);
  checkRange('minRtoMs', cfg.minRtoMs, 1, cfg.maxRtoMs);
  checkRange('probeMinMs', cfg.probeMinMs, 1, cfg.probeMaxMs);
  checkRange('deadLinkMs', cfg.deadLinkMs, 1, Number.MAX_SAFE_INTEGER);
  checkRange('maxReassembly', cfg.maxReassembly, 1, 4096);
  checkRange('initialSn', cfg.initialSn, 0, 0xffffffff);
  checkMtu(opts.mtu);
  if (opts.incarnation !== undefined) checkRange('incarnation', opts.incarnation, 1, 255);
  if (!Number.isInteger(opts.conv) || opts.conv < 0 || opts.conv > 0xffffffff) {
    throw new TunnelError('BAD_CONFIG', `arq conv: ${opts.conv} is not a u32`);
  }
  return cfg;
}

export function checkMtu(mtu: number): void {
  checkRange('mtu', mtu, MIN_MTU, MAX_MTU);
}

function checkRange(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new TunnelError('BAD_CONFIG', `arq ${name}: ${v} is not an integer in [${min}, ${max}]`);
  }
}

/** Counters exposed as `session.stats` (for metrics and tests). */
export interface ArqStats {
  datagramsOut: number;
  datagramsIn: number;
  bytesOut: number;
  bytesIn: number;
  segmentsSent: number;
  retransmitsTimeout: number;
  retransmitsFast: number;
  /** Segment transmissions sent as PUSHF fragments (the MTU shrank below them). */
  fragmentedSends: number;
  /** Garbage dropped by input(), by reason. */
  garbage: { short: number; conv: number; cmd: number; length: number; fragment: number };
  /** Valid segments dropped by the receiver, by reason. */
  dropped: { duplicate: number; window: number; bytes: number; reassembly: number; reentrant: number };
  probesSent: number;
  /** WASKs sent behind new data to ask for ACKs at once (a window too small for the peer's ACK policy). */
  ackAsks: number;
  /** 'silent' events: a resend was due with nothing heard from the peer for half an RTO. */
  silences: number;
}

export function newArqStats(): ArqStats {
  return {
    datagramsOut: 0,
    datagramsIn: 0,
    bytesOut: 0,
    bytesIn: 0,
    segmentsSent: 0,
    retransmitsTimeout: 0,
    retransmitsFast: 0,
    fragmentedSends: 0,
    garbage: { short: 0, conv: 0, cmd: 0, length: 0, fragment: 0 },
    dropped: { duplicate: 0, window: 0, bytes: 0, reassembly: 0, reentrant: 0 },
    probesSent: 0,
    ackAsks: 0,
    silences: 0,
  };
}
