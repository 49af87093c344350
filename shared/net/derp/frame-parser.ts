/**
 * Resumable DERP frame parser. Bytes arrive in chunks that may split a frame anywhere (inside the header
 * included) or hold several frames at once (WebSocket messages and TLS records do both). Each complete
 * frame is handed to `onFrame` as one Buffer holding header + body:
 * - a view into the chunk when the whole frame sits in one chunk (no copy);
 * - otherwise a buffer of exactly 5 + length bytes, allocated only after `length` passed the limit,
 *   into which the pieces are copied.
 * The parser never touches a frame again after handing it over, and a chunk is memory its caller never
 * reuses (the receive rule, shared/net/buffers/received.ts): callees may keep a frame or rewrite it in place.
 * whole() lets the owner handle a chunk that is exactly one frame itself.
 */
import { TunnelError } from '../../errors.js';
import { FRAME_HEADER_LEN, MAX_FRAME_LEN } from './frames.js';

export type FrameHandler = (type: number, frame: Buffer) => void;

const State = { Header: 0, Body: 1, Failed: 2 } as const;
type StateValue = (typeof State)[keyof typeof State];

export class FrameParser {
  readonly #onFrame: FrameHandler;
  readonly #maxLen: number;
  #state: StateValue = State.Header;
  /** Header bytes collected so far when a header spans chunks. */
  readonly #hdr = Buffer.alloc(FRAME_HEADER_LEN);
  #hdrHave = 0;
  /** The frame being assembled across chunks (header included). */
  #frame: Buffer | null = null;
  #frameHave = 0;

  constructor(onFrame: FrameHandler, maxLen = MAX_FRAME_LEN) {
    this.#onFrame = onFrame;
    this.#maxLen = maxLen;
  }

  /** Bytes held back waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.#state === State.Body ? this.#frameHave : this.#hdrHave;
  }

  /**
   * `chunk` itself when it is exactly one whole frame and nothing is held back (one DERP frame per WebSocket
   * message, the usual case): its owner handles it at once, without a callback through the parser. Null
   * otherwise: push() it. Throws as push() does for a frame over the length limit.
   */
  whole(chunk: Buffer): Buffer | null {
    if (this.#state !== State.Header || this.#hdrHave !== 0 || chunk.length < FRAME_HEADER_LEN) return null;
    const len = this.#checkLen(chunk.readUInt32BE(1));
    return chunk.length === FRAME_HEADER_LEN + len ? chunk : null;
  }

  /**
   * Feeds one chunk. Throws TunnelError DERP_PROTOCOL when a frame is over the length limit; the parser is
   * then failed for good (the connection must be closed). Errors thrown by onFrame propagate unchanged.
   */
  push(chunk: Buffer): void {
    if (this.#state === State.Failed) throw new TunnelError('DERP_PROTOCOL', 'frame parser already failed');
    const n = chunk.length;
    let off = 0;
    while (off < n) {
      if (this.#state === State.Body) {
        const frame = this.#frame!;
        const take = Math.min(frame.length - this.#frameHave, n - off);
        chunk.copy(frame, this.#frameHave, off, off + take);
        this.#frameHave += take;
        off += take;
        if (this.#frameHave === frame.length) this.#emitAssembled();
        continue;
      }
      if (this.#hdrHave === 0 && n - off >= FRAME_HEADER_LEN) {
        // Fast path: the header is whole in this chunk.
        const len = this.#checkLen(chunk.readUInt32BE(off + 1));
        const end = off + FRAME_HEADER_LEN + len;
        if (end <= n) {
          const frame = chunk.subarray(off, end);
          off = end;
          this.#onFrame(frame[0]!, frame);
          continue;
        }
        const frame = Buffer.allocUnsafe(FRAME_HEADER_LEN + len);
        chunk.copy(frame, 0, off, n);
        this.#frame = frame;
        this.#frameHave = n - off;
        this.#state = State.Body;
        off = n;
        continue;
      }
      // The header spans chunks: collect it byte range by byte range.
      const take = Math.min(FRAME_HEADER_LEN - this.#hdrHave, n - off);
      chunk.copy(this.#hdr, this.#hdrHave, off, off + take);
      this.#hdrHave += take;
      off += take;
      if (this.#hdrHave < FRAME_HEADER_LEN) continue;
      this.#hdrHave = 0;
      const len = this.#checkLen(this.#hdr.readUInt32BE(1));
      const frame = Buffer.allocUnsafe(FRAME_HEADER_LEN + len);
      this.#hdr.copy(frame, 0);
      this.#frame = frame;
      this.#frameHave = FRAME_HEADER_LEN;
      this.#state = State.Body;
      if (len === 0) this.#emitAssembled();
    }
  }

  #emitAssembled(): void {
    const frame = this.#frame!;
    this.#frame = null;
    this.#frameHave = 0;
    this.#state = State.Header;
    this.#onFrame(frame[0]!, frame);
  }

  #checkLen(len: number): number {
    if (len > this.#maxLen) {
      this.#state = State.Failed;
      this.#frame = null;
      throw new TunnelError(
        'DERP_PROTOCOL',
        `frame length ${len} is over the limit of ${this.#maxLen} bytes`,
      );
    }
    return len;
  }
}
