/**
 * "Open with target": the first bytes of a stream name where the opener wants to go, and the acceptor
 * answers before any application byte flows. Both messages share one 6-byte header, BIG-endian:
 *
 *   off len field
 *    0   1  version u8   1
 *    1   1  type    u8   1 OPEN (opener -> acceptor), 2 REPLY (acceptor -> opener)
 *    2   1  status  u8   OPEN: 0; REPLY: 0 OK, 1 REFUSED, 2 UPSTREAM_FAILED, 3 BAD_REQUEST
 *    3   1  rsv     u8   0
 *    4   2  len     u16  bytes of UTF-8 text that follow (OPEN: target "host:port", 1..1024; REPLY: reason, 0..1024)
 *    6 len  text
 *
 * The opener may send its first application bytes right after the OPEN, before the reply (`first`): the
 * acceptor leaves them in the stream until its target is reached. After an OK reply the stream carries the
 * application's bytes both ways. After any other reply the acceptor half-closes and the opener destroys the
 * stream (bytes it sent early are dropped with it).
 */
import type { Clock } from '../../clock.js';
import { type ErrorCode, TunnelError } from '../../errors.js';
import type { MuxSession } from './mux-session.js';
import type { MuxStream } from './mux-stream.js';

export const OPEN_VERSION = 1;
export const OPEN_HEADER = 6;
export const OPEN_TYPE_REQUEST = 1;
export const OPEN_TYPE_REPLY = 2;
export const OPEN_MAX_TEXT = 1024;

export const OPEN_OK = 0;
export const OPEN_REFUSED = 1;
export const OPEN_UPSTREAM_FAILED = 2;
export const OPEN_BAD_REQUEST = 3;

export interface OpenMessage {
  type: number;
  status: number;
  text: string;
}

export function encodeOpenMessage(type: number, status: number, text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  if (body.length > OPEN_MAX_TEXT) {
    throw new TunnelError('BAD_INPUT', `open-target text of ${body.length} bytes is over ${OPEN_MAX_TEXT}`);
  }
  const b = Buffer.alloc(OPEN_HEADER + body.length);
  b[0] = OPEN_VERSION;
  b[1] = type;
  b[2] = status;
  b.writeUInt16BE(body.length, 4);
  body.copy(b, OPEN_HEADER);
  return b;
}

/** Resumable reader of one open message; copies at most OPEN_HEADER + OPEN_MAX_TEXT bytes. */
export class OpenMessageReader {
  readonly #buf = Buffer.alloc(OPEN_HEADER + OPEN_MAX_TEXT);
  #have = 0;
  #need = OPEN_HEADER;

  /** Returns the message and the bytes after it once complete, null while incomplete; throws on bad input. */
  push(chunk: Buffer): { msg: OpenMessage; rest: Buffer } | null {
    const k = Math.min(this.#need - this.#have, chunk.length);
    chunk.copy(this.#buf, this.#have, 0, k);
    this.#have += k;
    let used = k;
    if (this.#have === OPEN_HEADER && this.#need === OPEN_HEADER) {
      const b = this.#buf;
      if (b[0] !== OPEN_VERSION)
        throw new TunnelError('WIRE_BAD_TYPE', `open-target: unknown version ${b[0]}`);
      if (b[1] !== OPEN_TYPE_REQUEST && b[1] !== OPEN_TYPE_REPLY) {
        throw new TunnelError('WIRE_BAD_TYPE', `open-target: unknown type ${b[1]}`);
      }
      const len = b.readUInt16BE(4);
      if (len > OPEN_MAX_TEXT) {
        throw new TunnelError('WIRE_TOO_LARGE', `open-target: text of ${len} bytes is over ${OPEN_MAX_TEXT}`);
      }
      this.#need = OPEN_HEADER + len;
      const more = Math.min(this.#need - this.#have, chunk.length - used);
      chunk.copy(this.#buf, this.#have, used, used + more);
      this.#have += more;
      used += more;
    }
    if (this.#have < this.#need) return null;
    const b = this.#buf;
    const msg = { type: b[1]!, status: b[2]!, text: b.toString('utf8', OPEN_HEADER, this.#need) };
    return { msg, rest: chunk.subarray(used) };
  }
}

/**
 * Reads one open message off the front of `stream` (in paused mode, through 'readable'), then puts any
 * later bytes back with unshift(): the stream is left as if untouched, so 'data' listeners or pipe() work.
 */
export function readOpenMessage(stream: MuxStream, clock: Clock, timeoutMs: number): Promise<OpenMessage> {
  return new Promise((resolve, reject) => {
    const reader = new OpenMessageReader();
    const done = (): void => {
      clock.clearTimer(timer);
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('error', onErr);
    };
    const onReadable = (): void => {
      try {
        for (let c = stream.read() as Buffer | null; c !== null; c = stream.read() as Buffer | null) {
          const r = reader.push(c);
          if (!r) continue;
          done();
          if (r.rest.length > 0) stream.unshift(r.rest);
          resolve(r.msg);
          return;
        }
      } catch (err) {
        done();
        reject(err);
      }
    };
    const onEnd = (): void => {
      done();
      reject(new TunnelError('WIRE_TRUNCATED', `stream ${stream.id}: ended before its open-target message`));
    };
    const onErr = (e: Error): void => {
      done();
      reject(e);
    };
    const timer = clock.setTimer(timeoutMs, () => {
      done();
      reject(
        new TunnelError('TIMEOUT', `stream ${stream.id}: no open-target message within ${timeoutMs} ms`),
      );
    });
    stream.on('readable', onReadable);
    stream.on('end', onEnd);
    stream.on('error', onErr);
  });
}

const REFUSAL_CODES: Record<number, ErrorCode> = {
  [OPEN_REFUSED]: 'STREAM_REFUSED',
  [OPEN_UPSTREAM_FAILED]: 'UPSTREAM_FAILED',
  [OPEN_BAD_REQUEST]: 'BAD_INPUT',
};

export interface OpenTargetOptions {
  clock: Clock;
  timeoutMs?: number;
  /**
   * The opener's first bytes, sent with the OPEN in one write (no round trip before they leave): the acceptor
   * reads them after the OPEN, passes them on once its target answered, and drops them with the stream when it
   * refuses.
   */
  first?: Buffer;
}

/**
 * Opens a stream to `target` ("host:port"): sends OPEN (and `first`) and waits for the REPLY. Resolves with the
 * stream (bytes after the reply stay readable) or rejects with STREAM_REFUSED / UPSTREAM_FAILED / BAD_INPUT
 * carrying the acceptor's reason, or TIMEOUT.
 */
export async function openTarget(
  session: MuxSession,
  target: string,
  opts: OpenTargetOptions,
): Promise<MuxStream> {
  const req = encodeOpenMessage(OPEN_TYPE_REQUEST, 0, target);
  if (target.length === 0) throw new TunnelError('BAD_INPUT', 'open-target: empty target');
  const s = session.open();
  s.write(opts.first && opts.first.length > 0 ? Buffer.concat([req, opts.first]) : req);
  try {
    const msg = await readOpenMessage(s, opts.clock, opts.timeoutMs ?? 30_000);
    if (msg.type !== OPEN_TYPE_REPLY) {
      throw new TunnelError('WIRE_MALFORMED', `stream ${s.id}: expected an open-target reply`);
    }
    if (msg.status !== OPEN_OK) {
      const code = REFUSAL_CODES[msg.status] ?? 'STREAM_REFUSED';
      throw new TunnelError(code, `${target}: ${msg.text || 'refused'}`);
    }
    return s;
  } catch (err) {
    s.destroy();
    throw err;
  }
}

/** Acceptor side: reads the OPEN message and returns the requested target. */
export async function readOpenRequest(
  stream: MuxStream,
  opts: { clock: Clock; timeoutMs?: number },
): Promise<string> {
  const msg = await readOpenMessage(stream, opts.clock, opts.timeoutMs ?? 10_000);
  if (msg.type !== OPEN_TYPE_REQUEST || msg.text.length === 0) {
    throw new TunnelError('WIRE_MALFORMED', `stream ${stream.id}: expected an open-target request`);
  }
  return msg.text;
}

/** Acceptor side: answers OK (the stream then carries application bytes) or refuses and half-closes. */
export function replyOpen(stream: MuxStream, status: number, reason = ''): void {
  stream.write(encodeOpenMessage(OPEN_TYPE_REPLY, status, reason));
  if (status !== OPEN_OK) stream.end();
}
