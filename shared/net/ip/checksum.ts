/**
 * The Internet checksum (RFC 1071): the 16-bit ones' complement of the ones' complement sum of the
 * data taken as big-endian 16-bit words, an odd trailing byte padded with a zero byte.
 *
 * Hot path: long runs are summed 32 bits at a time through a Uint32Array view when 4-byte
 * aligned. On a little-endian host that sums byte-swapped 16-bit words; by RFC 1071's byte-order
 * independence the folded result is then just byte-swapped back.
 */
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';
/** Below this many bytes the plain loop is as fast as setting up a typed view. */
const WIDE_MIN = 64;

function fold(sum: number): number {
  let s = sum;
  while (s > 0xffff) s = (s % 0x10000) + Math.floor(s / 0x10000);
  return s;
}

/** Adds `buf[start, end)` to a running partial sum (not yet folded; any non-negative number). */
export function onesSum(buf: Uint8Array, start = 0, end = buf.length, initial = 0): number {
  let sum = initial;
  let i = start;
  const abs = buf.byteOffset + start;
  if (end - start >= WIDE_MIN && (abs & 3) === 0) {
    const words = (end - start) >>> 2;
    const u32 = new Uint32Array(buf.buffer, abs, words);
    let wide = 0;
    for (let k = 0; k < words; k++) {
      const w = u32[k]!;
      wide += (w & 0xffff) + (w >>> 16);
    }
    let f = fold(wide);
    if (LITTLE_ENDIAN) f = ((f & 0xff) << 8) | (f >>> 8);
    sum += f;
    i += words * 4;
  }
  const last = end - 1;
  for (; i < last; i += 2) sum += (buf[i]! << 8) | buf[i + 1]!;
  if (i === last) sum += buf[i]! << 8;
  return sum;
}

/** Folds a partial sum to 16 bits and complements it. */
export function finishChecksum(sum: number): number {
  return ~fold(sum) & 0xffff;
}

/** The checksum of `buf[start, end)`. Over data that embeds its own correct checksum this is 0. */
export function internetChecksum(buf: Uint8Array, start = 0, end = buf.length): number {
  return finishChecksum(onesSum(buf, start, end));
}
