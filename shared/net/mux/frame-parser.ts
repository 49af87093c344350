/**
 * Resumable mux frame parser over an ordered byte stream. Chunks may split a header or a payload at any
 * byte: a partial header is buffered (at most 11 bytes copied), payload bytes are handed on as views of the
 * incoming chunks as they arrive (never buffered here). Lengths are checked before any payload is accepted.
 * After a protocol error the parser is dead and ignores further input.
 */
import { TunnelError } from '../../errors.js';
import { FRAME_HEADER, type FrameHeader, MUX_VERSION, TYPE_DATA, TYPE_GO_AWAY } from './frame.js';

/** What reads a Data frame's payload (a stream): its pieces are handed to it directly, in order. */
export interface PayloadReader {
  onData(chunk: Buffer): void;
}

export interface FrameSink {
  /**
   * Called once per frame; returns the reader of a Data frame's payload (null: the payload is skipped).
   * Throw a TunnelError to reject the frame (the parser then stops).
   */
  header(h: FrameHeader): PayloadReader | null;
  /** End of a Data frame's payload (also called for a zero-length Data frame). */
  payloadEnd(): void;
}

export class FrameParser {
  readonly #sink: FrameSink;
  readonly #maxData: number;
  readonly #hdr = Buffer.alloc(FRAME_HEADER);
  #hdrLen = 0;
  #remaining = 0;
  #inPayload = false;
  /** The reader of the Data payload being parsed. */
  #reader: PayloadReader | null = null;
  #failed: TunnelError | null = null;
  readonly #decodedHeader: FrameHeader = { type: 0, flags: 0, streamId: 0, length: 0 };

  /** `maxData`: largest Data payload accepted in one frame (checked before the payload is read). */
  constructor(sink: FrameSink, maxData: number) {
    this.#sink = sink;
    this.#maxData = maxData;
  }

  get failed(): TunnelError | null {
    return this.#failed;
  }

  /** Feeds bytes. Throws the TunnelError that killed the parser (once); later calls are ignored. */
  push(chunk: Buffer): void {
    if (this.#failed) return;
    try {
      this.#push(chunk);
    } catch (err) {
      this.#failed =
        err instanceof TunnelError
          ? err
          : new TunnelError('INTERNAL', 'mux frame handler failed', { cause: err });
      throw this.#failed;
    }
  }

  #push(chunk: Buffer): void {
    let off = 0;
    const n = chunk.length;
    while (off < n) {
      if (this.#inPayload) {
        const k = Math.min(this.#remaining, n - off);
        this.#remaining -= k;
        const piece = chunk.subarray(off, off + k);
        off += k;
        this.#reader?.onData(piece);
        if (this.#remaining === 0) {
          this.#inPayload = false;
          this.#reader = null;
          this.#sink.payloadEnd();
        }
        continue;
      }
      let src: Buffer;
      let at: number;
      if (this.#hdrLen === 0 && n - off >= FRAME_HEADER) {
        src = chunk;
        at = off;
        off += FRAME_HEADER;
      } else {
        const k = Math.min(FRAME_HEADER - this.#hdrLen, n - off);
        chunk.copy(this.#hdr, this.#hdrLen, off, off + k);
        this.#hdrLen += k;
        off += k;
        if (this.#hdrLen < FRAME_HEADER) return;
        this.#hdrLen = 0;
        src = this.#hdr;
        at = 0;
      }
      this.#header(src, at);
    }
  }

  #header(src: Buffer, at: number): void {
    const version = src[at]!;
    const h = this.#decodedHeader;
    h.type = src[at + 1]!;
    h.flags = src.readUInt16BE(at + 2);
    h.streamId = src.readUInt32BE(at + 4);
    h.length = src.readUInt32BE(at + 8);
    if (version !== MUX_VERSION) throw new TunnelError('WIRE_BAD_TYPE', `mux: unknown version ${version}`);
    if (h.type > TYPE_GO_AWAY) throw new TunnelError('WIRE_BAD_TYPE', `mux: unknown frame type ${h.type}`);
    if (h.type === TYPE_DATA && h.length > this.#maxData) {
      throw new TunnelError(
        'WIRE_TOO_LARGE',
        `mux: data frame of ${h.length} bytes is over ${this.#maxData}`,
      );
    }
    const reader = this.#sink.header(h);
    if (h.type === TYPE_DATA) {
      if (h.length === 0) this.#sink.payloadEnd();
      else {
        this.#reader = reader;
        this.#remaining = h.length;
        this.#inPayload = true;
      }
    }
  }
}
