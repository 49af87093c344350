/**
 * Receive side of an ArqSession: out-of-order segments in a window of `slots` indexed by sequence number, in-order segments queued for
 * delivery, PUSHF reassembly. Bounded by `slots` segments and `maxBytes` bytes (+ the reassembly cap).
 */
import { RingQueue } from '../buffers/ring-queue.js';
import { Reassembly } from './reassembly.js';
import { CMD_PUSHF, seqDiff } from './segment.js';

export type RecvVerdict =
  | 'stored'
  | 'stored-out-of-order'
  | 'duplicate'
  | 'window'
  | 'bytes'
  | 'partial'
  | 'malformed'
  | 'reassembly-full'
  | 'empty';

export class RecvWindow {
  /** Next sn expected in order (everything below has been received). */
  rcvNxt: number;
  readonly #slots: number;
  readonly #maxBytes: number;
  readonly #reasm: Reassembly;
  #ring: (Buffer | undefined)[];
  #ringHead = 0;
  #oooBytes = 0;
  /** In-order segments not yet delivered; never more than `slots` (freeSlots gates push). */
  readonly #deliver: RingQueue<Buffer>;
  #deliverBytes = 0;

  constructor(slots: number, maxBytes: number, maxReassembly: number, initialSn: number) {
    this.#slots = slots;
    this.#maxBytes = maxBytes;
    this.#reasm = new Reassembly(maxReassembly);
    this.#ring = new Array(slots);
    this.#deliver = new RingQueue<Buffer>({ capacity: slots });
    this.rcvNxt = initialSn;
  }

  /** Slots not taken by undelivered in-order segments. */
  get freeSlots(): number {
    return this.#slots - this.#deliver.length;
  }
  /** Bytes held: out-of-order, undelivered, partially reassembled. */
  get heldBytes(): number {
    return this.#oooBytes + this.#deliverBytes + this.#reasm.bytes;
  }

  /** Window to advertise, in segments of `mss` bytes. */
  advertised(mss: number): number {
    const bytesFree = this.#maxBytes - this.#oooBytes - this.#deliverBytes;
    const byBytes = Math.max(0, Math.floor(bytesFree / mss));
    return Math.max(0, Math.min(this.freeSlots, byBytes, 0xffff));
  }

  push(cmd: number, sn: number, data: Buffer): RecvVerdict {
    const d = seqDiff(sn, this.rcvNxt);
    if (d < 0) return 'duplicate';
    if (d >= this.freeSlots) return 'window';
    const slot = (this.#ringHead + d) % this.#slots;
    if (this.#ring[slot] !== undefined) return 'duplicate';
    let seg = data;
    if (cmd === CMD_PUSHF) {
      const r = this.#reasm.add(sn, data);
      if (r.kind === 'malformed') return 'malformed';
      if (r.kind === 'full') return 'reassembly-full';
      if (r.kind === 'partial') return 'partial';
      seg = r.data;
    }
    if (seg.length === 0) return 'empty';
    if (this.#oooBytes + this.#deliverBytes + seg.length > this.#maxBytes) return 'bytes';
    this.#ring[slot] = seg;
    this.#oooBytes += seg.length;
    while (this.#ring[this.#ringHead] !== undefined) {
      const b = this.#ring[this.#ringHead]!;
      this.#ring[this.#ringHead] = undefined;
      this.#ringHead = (this.#ringHead + 1) % this.#slots;
      this.rcvNxt = (this.rcvNxt + 1) >>> 0;
      this.#oooBytes -= b.length;
      this.#deliver.push(b);
      this.#deliverBytes += b.length;
    }
    if (d === 0 && this.#reasm.size > 0) this.#reasm.dropBelow(this.rcvNxt);
    return d === 0 ? 'stored' : 'stored-out-of-order';
  }

  /** Next in-order segment to deliver, if any. */
  shift(): Buffer | undefined {
    const b = this.#deliver.shift();
    if (b !== undefined) this.#deliverBytes -= b.length;
    return b;
  }

  clear(): void {
    this.#ring = [];
    this.#ringHead = 0;
    this.#oooBytes = 0;
    this.#deliver.clear();
    this.#deliverBytes = 0;
    this.#reasm.clear();
  }
}
