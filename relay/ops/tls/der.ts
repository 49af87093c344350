/**
 * The little DER (ASN.1 Distinguished Encoding Rules) writer the self-signed certificate needs.
 * Every value is tag | length | contents; lengths < 128 take one byte, longer ones 0x80|n then n
 * big-endian bytes. Only the types X.509 uses here are provided.
 */

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

function encodeLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

export const seq = (...items: Buffer[]): Buffer => tlv(TAG.SEQUENCE, ...items);
export const set = (...items: Buffer[]): Buffer => tlv(TAG.SET, ...items);

/** Context-specific constructed tag [n] (EXPLICIT wrapping). */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);

/** Context-specific primitive tag [n] (IMPLICIT, e.g. GeneralName dNSName [2], iPAddress [7]). */
export const implicit = (n: number, bytes: Buffer): Buffer => tlv(0x80 | n, bytes);

/** A non-negative INTEGER from big-endian bytes: leading zeros trimmed, 0x00 added if the top bit is set. */
export function uint(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  let b = bytes.subarray(i);
  if (b.length === 0) b = Buffer.from([0]);
  if ((b[0]! & 0x80) !== 0) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(TAG.INTEGER, b);
}

export const smallInt = (n: number): Buffer => uint(Buffer.from([n]));

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(TAG.OID, Buffer.from(out));
}

export const bitString = (bytes: Buffer): Buffer => tlv(TAG.BIT_STRING, Buffer.from([0]), bytes);
export const octetString = (bytes: Buffer): Buffer => tlv(TAG.OCTET_STRING, bytes);
export const utf8 = (s: string): Buffer => tlv(TAG.UTF8_STRING, Buffer.from(s, 'utf8'));
export const bool = (v: boolean): Buffer => tlv(TAG.BOOLEAN, Buffer.from([v ? 0xff : 0]));

/** X.509 Time: UTCTime (YYMMDDHHMMSSZ) before 2050, GeneralizedTime (YYYYMMDDHHMMSSZ) from 2050 on. */
export function time(ms: number): Buffer {
  const iso = new Date(Math.floor(ms / 1000) * 1000).toISOString(); // 2026-11-21T10:00:00.000Z
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '');
  const year = Number(iso.slice(0, 4));
  if (year < 2050) return tlv(TAG.UTC_TIME, Buffer.from(`${digits.slice(2)}Z`, 'ascii'));
  return tlv(TAG.GENERALIZED_TIME, Buffer.from(`${digits}Z`, 'ascii'));
}
