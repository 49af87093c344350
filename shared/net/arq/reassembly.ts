/**
 * Reassembly of PUSHF fragments into whole segments. Pieces may overlap, repeat, or come from
 * retransmissions cut at a different size; coverage is tracked as merged intervals.
 * Bounded: at most `maxSegments` partial segments at a time; each is at most MAX_SEGMENT_DATA bytes.
 */
import { FRAG_HEADER, MAX_SEGMENT_DATA } from './segment.js';

interface Partial {
  buf: Buffer;
  /** Sorted, merged, half-open [start, end) intervals already received. */
  have: number[];
}

export type FragmentResult =
  | { kind: 'complete'; data: Buffer }
  | { kind: 'partial' }
  | { kind: 'malformed' }
  | { kind: 'full' };

export class Reassembly {
  readonly #parts = new Map<number, Partial>();
  readonly #maxSegments: number;

  constructor(maxSegments: number) {
    this.#maxSegments = maxSegments;
  }

  get size(): number {
    return this.#parts.size;
  }

  /** Bytes allocated for partial segments. */
  get bytes(): number {
    let n = 0;
    for (const p of this.#parts.values()) n += p.buf.length;
    return n;
  }

  /** `data` is the PUSHF payload (fragment header + piece). */
  add(sn: number, data: Buffer): FragmentResult {
    if (data.length < FRAG_HEADER + 1) return { kind: 'malformed' };
    const off = data.readUInt16LE(0);
    const total = data.readUInt16LE(2);
    const piece = data.subarray(FRAG_HEADER);
    if (total === 0 || total > MAX_SEGMENT_DATA || off + piece.length > total) return { kind: 'malformed' };
    let p = this.#parts.get(sn);
    if (!p) {
      if (this.#parts.size >= this.#maxSegments) return { kind: 'full' };
      p = { buf: Buffer.allocUnsafe(total), have: [] };
      this.#parts.set(sn, p);
    } else if (p.buf.length !== total) {
      return { kind: 'malformed' };
    }
    piece.copy(p.buf, off);
    p.have = mergeInterval(p.have, off, off + piece.length);
    if (p.have.length === 2 && p.have[0] === 0 && p.have[1] === total) {
      this.#parts.delete(sn);
      return { kind: 'complete', data: p.buf };
    }
    return { kind: 'partial' };
  }

  /** Drops partial segments whose sn is below `below` (already delivered through another copy). */
  dropBelow(below: number): void {
    for (const sn of this.#parts.keys()) if (((sn - below) | 0) < 0) this.#parts.delete(sn);
  }

  clear(): void {
    this.#parts.clear();
  }
}

/** Inserts [s, e) into a sorted flat list of merged intervals [s0, e0, s1, e1, ...]. */
export function mergeInterval(have: number[], s: number, e: number): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < have.length && have[i + 1]! < s) {
    out.push(have[i]!, have[i + 1]!);
    i += 2;
  }
  let ns = s;
  let ne = e;
  while (i < have.length && have[i]! <= ne) {
    ns = Math.min(ns, have[i]!);
    ne = Math.max(ne, have[i + 1]!);
    i += 2;
  }
  out.push(ns, ne);
  while (i < have.length) {
    out.push(have[i]!, have[i + 1]!);
    i += 2;
  }
  return out;
}
