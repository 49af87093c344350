/**
 * A SPDY/3.1 session as the API server's side of it, over any byte stream (an upgraded socket, or a WebSocket
 * tunnel for kubectl's port-forward): the client opens streams, the server answers each with SYN_REPLY and then
 * exchanges data frames; FIN half-closes a direction. Pings are answered; settings and window updates are read
 * and ignored (the test's transfers are far below the 64 KiB initial window).
 */
import type { Duplex } from 'node:stream';
import {
  CONTROL,
  controlFrame,
  dataFrame,
  decodeHeaderBlock,
  encodeHeaderBlock,
  FLAG_FIN,
  type Frame,
  FrameReader,
  u32,
} from './frames.js';
import { type HeaderCodec, headerCodec } from './header-codec.js';

const MAX_STREAMS = 64;

export interface SpdyStream {
  readonly id: number;
  readonly headers: Record<string, string>;
  write(data: Buffer | string): void;
  /** Half-closes the server's direction (an empty data frame with FIN). */
  end(data?: Buffer | string): void;
  onData: (data: Buffer) => void;
  onEnd: () => void;
}

export class SpdySession {
  readonly #socket: Duplex;
  readonly #codec: HeaderCodec = headerCodec();
  readonly #reader = new FrameReader();
  readonly #streams = new Map<number, SpdyStream>();
  readonly #onStream: (stream: SpdyStream) => void;
  #inChain: Promise<void> = Promise.resolve();
  #outChain: Promise<void> = Promise.resolve();

  constructor(socket: Duplex, onStream: (stream: SpdyStream) => void) {
    this.#socket = socket;
    this.#onStream = onStream;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('close', () => this.#codec.close());
    socket.on('error', () => {});
  }

  close(): void {
    this.#send(() => controlFrame(CONTROL.goAway, 0, Buffer.concat([u32(0), u32(0)])));
    void this.#outChain.then(() => this.#socket.end());
  }

  #read(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.#reader.push(chunk);
    } catch {
      return void this.#socket.destroy();
    }
    for (const frame of frames) {
      this.#inChain = this.#inChain.then(() => this.#handle(frame)).catch(() => void this.#socket.destroy());
    }
  }

  async #handle(frame: Frame): Promise<void> {
    if (frame.kind === 'data') return this.#data(frame.streamId, frame.flags, frame.payload);
    const { type, payload } = frame;
    if (type === CONTROL.synStream) return this.#open(payload, frame.flags);
    if (type === CONTROL.headers) await this.#codec.inflate(payload.subarray(4));
    else if (type === CONTROL.ping) this.#send(() => controlFrame(CONTROL.ping, 0, payload));
    else if (type === CONTROL.rstStream) this.#finish(payload.readUInt32BE(0) & 0x7fffffff);
    else if (type === CONTROL.goAway) this.#socket.end();
  }

  async #open(payload: Buffer, flags: number): Promise<void> {
    const id = payload.readUInt32BE(0) & 0x7fffffff;
    const headers = decodeHeaderBlock(await this.#codec.inflate(payload.subarray(10)));
    if (this.#streams.size >= MAX_STREAMS) throw new Error('too many SPDY streams');
    const stream: SpdyStream = {
      id,
      headers,
      write: (data) => this.#send(() => dataFrame(id, 0, Buffer.from(data))),
      end: (data) => this.#send(() => dataFrame(id, FLAG_FIN, Buffer.from(data ?? ''))),
      onData: () => {},
      onEnd: () => {},
    };
    this.#streams.set(id, stream);
    const reply = encodeHeaderBlock({});
    this.#send(async () =>
      controlFrame(CONTROL.synReply, 0, Buffer.concat([u32(id), await this.#codec.deflate(reply)])),
    );
    this.#onStream(stream);
    if (flags & FLAG_FIN) this.#finish(id);
  }

  #data(id: number, flags: number, payload: Buffer): void {
    const stream = this.#streams.get(id);
    if (!stream) return;
    if (payload.length) stream.onData(Buffer.from(payload));
    if (flags & FLAG_FIN) this.#finish(id);
  }

  #finish(id: number): void {
    const stream = this.#streams.get(id);
    this.#streams.delete(id);
    stream?.onEnd();
  }

  #send(make: () => Buffer | Promise<Buffer>): void {
    this.#outChain = this.#outChain.then(async () => {
      if (!this.#socket.destroyed) this.#socket.write(await make());
    });
  }
}
