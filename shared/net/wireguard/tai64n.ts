/**
 * TAI64N timestamps (reference §4): 12 bytes big-endian, seconds = 0x400000000000000a + unix seconds,
 * then nanoseconds with the low 24 bits cleared ("whitener", ~16.7 ms granularity).
 * TimestampGenerator never repeats or goes backwards, so two initiations in quick succession still
 * carry strictly increasing timestamps (the responder rejects anything not newer than the last).
 */
export const TAI64N_LEN = 12;
const TAI64_BASE = 0x400000000000000an;
const WHITENER_STEP = 0x1000000;

export function tai64n(wallMs: number): Buffer {
  const out = Buffer.alloc(TAI64N_LEN);
  const secs = Math.floor(wallMs / 1000);
  const nanos = Math.floor((wallMs - secs * 1000) * 1e6);
  out.writeBigUInt64BE(TAI64_BASE + BigInt(secs), 0);
  out.writeUInt32BE((nanos & ~(WHITENER_STEP - 1)) >>> 0, 8);
  return out;
}

/** Byte-wise comparison (both are big-endian): negative, zero or positive. */
export function compareTai64n(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/**
 * The all-zero timestamp every generator and handshake starts from. Shared and never written: holders
 * replace it with a new Buffer (a hub keeps thousands of peers; one 12-byte Buffer each adds up).
 */
export const ZERO_TAI64N: Buffer = Buffer.alloc(TAI64N_LEN);

export class TimestampGenerator {
  #last: Buffer = ZERO_TAI64N;

  next(wallMs: number): Buffer {
    let ts = tai64n(wallMs);
    if (compareTai64n(ts, this.#last) <= 0) {
      ts = Buffer.from(this.#last);
      const nanos = ts.readUInt32BE(8) + WHITENER_STEP;
      if (nanos >= 1_000_000_000) {
        ts.writeBigUInt64BE(ts.readBigUInt64BE(0) + 1n, 0);
        ts.writeUInt32BE(0, 8);
      } else {
        ts.writeUInt32BE(nanos, 8);
      }
    }
    this.#last = ts;
    return ts;
  }
}
