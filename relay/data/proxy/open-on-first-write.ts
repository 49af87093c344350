/**
 * A transport that opens the real one with the first bytes written to it. `http.request` writes its request
 * head into it; the head goes to `open`, which sends it with a stream open (open-target.ts `first`: no round trip
 * to the agent before the head leaves). Once the opened transport is there, later writes, reads, ends and destroys
 * pass through to it. A failed open destroys this transport with the open's error, kept in `openError` for the
 * caller, which answers it as its own (the request's writer only sees a transport that failed).
 */
import { Duplex } from 'node:stream';

export type OpenWith = (first: Buffer) => Promise<Duplex>;

export class OpenOnFirstWrite extends Duplex {
  readonly #open: OpenWith;
  #inner: Duplex | null = null;
  #ended = false;
  /** Why the open failed; undefined while it has not. */
  openError: unknown = undefined;

  constructor(open: OpenWith) {
    super({ allowHalfOpen: true });
    this.#open = open;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#send([chunk], cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.#send(
      chunks.map((c) => c.chunk),
      cb,
    );
  }

  override _read(): void {
    this.#inner?.resume();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#inner?.end();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#inner?.destroy(err ?? undefined);
    cb(err);
  }

  /** Writes to the opened transport; the first call opens it with its bytes (the Writable calls one at a time). */
  #send(chunks: Buffer[], cb: (err?: Error | null) => void): void {
    const inner = this.#inner;
    if (inner) {
      for (let i = 0; i < chunks.length; i++)
        inner.write(chunks[i], i === chunks.length - 1 ? cb : undefined);
      return;
    }
    const first = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    this.#open(first).then(
      (opened) => {
        if (this.destroyed) return void opened.destroy();
        this.#attach(opened);
        cb();
      },
      (err: unknown) => {
        this.openError = err;
        cb(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  #attach(inner: Duplex): void {
    this.#inner = inner;
    inner.on('data', (d: Buffer) => {
      if (!this.push(d)) inner.pause();
    });
    inner.on('end', () => {
      this.#ended = true;
      this.push(null);
    });
    inner.on('error', (e: Error) => this.destroy(e));
    inner.on('close', () => {
      if (!this.#ended) this.destroy();
    });
  }
}
