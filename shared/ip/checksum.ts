/**
 * The Internet checksum (RFC 1071): the 16-bit ones' complement of the ones' complement sum of the
 * data taken as big-endian 16-bit words, an odd trailing byte padded with a zero byte.
 */

/** Adds `buf[start, end)` to a running 32-bit-safe partial sum (not yet folded). */
export function onesSum(buf: Uint8Array, start = 0, end = buf.length, initial = 0): number {
  let sum = initial;
  let i = start;
  const last = end - 1;
  for (; i < last; i += 2) {
    sum += (buf[i]! << 8) | buf[i + 1]!;
    // Fold early so the sum never leaves the safe small-integer range on long inputs.
    if (sum > 0x7fff_ffff) sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (i === last) sum += buf[i]! << 8;
  return sum;
}

/** Folds a partial sum to 16 bits and complements it. */
export function finishChecksum(sum: number): number {
  let s = sum;
  while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
  return ~s & 0xffff;
}

/** The checksum of `buf[start, end)`. Over data that embeds its own correct checksum this is 0. */
export function internetChecksum(buf: Uint8Array, start = 0, end = buf.length): number {
  return finishChecksum(onesSum(buf, start, end));
}
