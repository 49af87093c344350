/**
 * Test helper: two connected in-memory Duplex ends. Bytes written to one are read from the other,
 * delivered asynchronously (like a socket), optionally re-chunked into random pieces, with backpressure:
 * a write's callback waits until the reading end has room.
 */
import { Duplex } from 'node:stream';
import { mulberry32 } from './faulty-path.js';

export interface PairOptions {
  /** Re-chunk every write into pieces of 1..maxPiece bytes (0 = deliver writes as they are). */
  maxPiece?: number;
  seed?: number;
  highWaterMark?: number;
}

class End extends Duplex {
  peer!: End;
  #waiting: (() => void) | null = null;
  readonly #maxPiece: number;
  readonly #rand: () => number;

  constructor(o: PairOptions, seed: number) {
    super({ highWaterMark: o.highWaterMark ?? 64 * 1024 });
    this.#maxPiece = o.maxPiece ?? 0;
    this.#rand = mulberry32(seed);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    process.nextTick(() => {
      if (this.peer.destroyed) return cb();
      let ok = true;
      if (this.#maxPiece > 0) {
        let off = 0;
        while (off < chunk.length) {
          const n = 1 + Math.floor(this.#rand() * this.#maxPiece);
          ok = this.peer.push(chunk.subarray(off, off + n));
          off += n;
        }
      } else {
        ok = this.peer.push(chunk);
      }
      if (ok) cb();
      else this.peer.#waiting = cb;
    });
  }

  override _final(cb: (err?: Error | null) => void): void {
    process.nextTick(() => {
      if (!this.peer.destroyed) this.peer.push(null);
      cb();
    });
  }

  override _read(): void {
    const w = this.#waiting;
    this.#waiting = null;
    w?.();
  }
}

export function duplexPair(o: PairOptions = {}): [Duplex, Duplex] {
  const a = new End(o, o.seed ?? 1);
  const b = new End(o, (o.seed ?? 1) + 1);
  a.peer = b;
  b.peer = a;
  return [a, b];
}
