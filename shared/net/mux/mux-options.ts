/** Options and defaults of a MuxSession. Every cap and timer is listed in docs/LIMITS.md. */
import type { Clock } from '../../clock.js';
import { TunnelError } from '../../errors.js';

/** yamux's fixed initial stream window: both sides assume it until a WindowUpdate says more. */
export const BASE_WINDOW = 256 * 1024;

export interface MuxOptions {
  /** 'client' opens odd stream ids, 'server' even ones. */
  role: 'client' | 'server';
  clock: Clock;
  /** Writes bytes to the underlying ordered byte stream; false = back off until transportDrained(). */
  write(bytes: Buffer): boolean;
  /** Called once when the session closes, to release the underlying transport. */
  closeTransport?(): void;
  /** Receive window each stream starts with (>= 256 KiB; the excess is announced in the SYN/ACK frame). */
  initialWindow?: number;
  /** Auto-tuning doubles a stream's receive window, up to this, while the reader keeps up (default 16 MiB). */
  maxWindow?: number;
  /** Cap on open streams (both directions). Inbound excess is reset with RST_STREAM_LIMIT (default 512). */
  maxStreams?: number;
  /**
   * Whether the peer may open streams (default true). false: every stream the peer opens is reset at once with
   * RST_PROTOCOL and counted (`refused.protocolViolation`); nothing of it is buffered.
   */
  acceptStreams?: boolean;
  /** Cap on the sum of all streams' window growth beyond initialWindow (auto-tuning budget, default 64 MiB). */
  maxSessionGrowth?: number;
  /** Largest Data payload sent in one frame (default 64 KiB). */
  maxFrameData?: number;
  /** Ping interval; 0 disables keepalive (default 30 s). */
  keepAliveMs?: number;
  /** A ping unanswered for this long closes the session with TIMEOUT (default 10 s). */
  pingTimeoutMs?: number;
  /** A stream with no data either way for this long is reset (RST_IDLE_TIMEOUT); 0 disables (default 0). */
  idleTimeoutMs?: number;
  /** Readable/writable high-water mark of each stream in bytes (default 64 KiB). */
  streamHighWater?: number;
}

export type MuxConfig = Required<
  Omit<MuxOptions, 'role' | 'clock' | 'write' | 'closeTransport' | 'acceptStreams'>
>;

export const MUX_DEFAULTS: MuxConfig = {
  initialWindow: BASE_WINDOW,
  maxWindow: 16 * 1024 * 1024,
  maxStreams: 512,
  maxSessionGrowth: 64 * 1024 * 1024,
  maxFrameData: 64 * 1024,
  keepAliveMs: 30_000,
  pingTimeoutMs: 10_000,
  idleTimeoutMs: 0,
  streamHighWater: 64 * 1024,
};

export function resolveMuxConfig(opts: MuxOptions): MuxConfig {
  const cfg = { ...MUX_DEFAULTS };
  for (const k of Object.keys(MUX_DEFAULTS) as (keyof MuxConfig)[]) {
    const v = opts[k];
    if (v !== undefined) cfg[k] = v;
  }
  const range = (name: keyof MuxConfig, min: number, max: number): void => {
    const v = cfg[name];
    if (!Number.isInteger(v) || v < min || v > max) {
      throw new TunnelError('BAD_CONFIG', `mux ${name}: ${v} is not an integer in [${min}, ${max}]`);
    }
  };
  range('initialWindow', BASE_WINDOW, 0x7fffffff);
  range('maxWindow', cfg.initialWindow, 0x7fffffff);
  range('maxStreams', 1, 1_000_000);
  range('maxSessionGrowth', 0, 0x7fffffff);
  range('maxFrameData', 1, 16 * 1024 * 1024);
  range('keepAliveMs', 0, 86_400_000);
  range('pingTimeoutMs', 1, 86_400_000);
  range('idleTimeoutMs', 0, 86_400_000);
  range('streamHighWater', 1, 64 * 1024 * 1024);
  if (opts.role !== 'client' && opts.role !== 'server') {
    throw new TunnelError('BAD_CONFIG', `mux role: ${String(opts.role)} is not client or server`);
  }
  return cfg;
}

export interface MuxStats {
  framesIn: number;
  framesOut: number;
  streamsOpened: number;
  streamsAccepted: number;
  /**
   * Inbound streams reset at once, by reason: over maxStreams, the session going away, or opened by a peer that
   * may not open streams (acceptStreams false).
   */
  refused: { limit: number; goingAway: number; protocolViolation: number };
  /** Data frames for unknown (already closed) streams, discarded. */
  strayData: number;
  pingsSent: number;
}

export function newMuxStats(): MuxStats {
  return {
    framesIn: 0,
    framesOut: 0,
    streamsOpened: 0,
    streamsAccepted: 0,
    refused: { limit: 0, goingAway: 0, protocolViolation: 0 },
    strayData: 0,
    pingsSent: 0,
  };
}
