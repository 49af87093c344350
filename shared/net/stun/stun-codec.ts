/**
 * STUN Binding (RFC 5389, and the classic RFC 3489 form old clients send): parse a request, build the success
 * response that tells the sender its address as the responder saw it. No I/O. Only what a reflexive-address
 * responder needs; anything else is classified, never thrown.
 *
 * Message (20-byte header, then attributes; all big-endian):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  |0 0|     STUN Message Type     |         Message Length        |   length of the attributes, multiple of 4
 *  |                 Magic Cookie 0x2112A442 (RFC 5389)            |   RFC 3489: first 4 bytes of a 16-byte id
 *  |                     Transaction ID (96 bits)                  |
 * Attribute: type (16) | length (16) | value, padded to a multiple of 4 bytes.
 *   XOR-MAPPED-ADDRESS 0x0020: 0x00 | family (0x01 IPv4, 0x02 IPv6) | port ^ 0x2112 | address ^ (cookie || txid)
 *   MAPPED-ADDRESS     0x0001: 0x00 | family | port | address                  (RFC 3489 clients)
 *   CHANGE-REQUEST     0x0003: 4 bytes, flags 0x04 change IP, 0x02 change port (RFC 3489 NAT tests)
 *   FINGERPRINT        0x8028: CRC-32 of the message before it, XOR 0x5354554E; the last attribute
 */
import { crc32 } from 'node:zlib';

export const STUN_HEADER_LEN = 20;
export const STUN_MAGIC_COOKIE = 0x2112a442;
/** Binding request / success response message types. */
export const STUN_BINDING_REQUEST = 0x0001;
export const STUN_BINDING_SUCCESS = 0x0101;
export const ATTR_MAPPED_ADDRESS = 0x0001;
export const ATTR_CHANGE_REQUEST = 0x0003;
export const ATTR_XOR_MAPPED_ADDRESS = 0x0020;
export const ATTR_FINGERPRINT = 0x8028;
const FINGERPRINT_XOR = 0x5354554e;
const CHANGE_IP = 0x04;
const CHANGE_PORT = 0x02;
/** Longest request accepted (bytes): Binding requests are tens of bytes; RFC 5389 keeps UDP messages < 548. */
export const STUN_MAX_REQUEST_BYTES = 548;

export type StunIgnoreReason =
  | 'short' // fewer than 20 bytes
  | 'too-long' // over STUN_MAX_REQUEST_BYTES
  | 'not-stun' // top two bits set, or length field not a multiple of 4 / not matching the datagram
  | 'not-binding-request' // another method or class (responses, indications)
  | 'attribute' // an attribute runs past the end of the message
  | 'fingerprint' // FINGERPRINT present but wrong, or not the last attribute
  | 'change-request'; // asks for an answer from another address or port, which this responder does not have

export interface StunBindingRequest {
  readonly kind: 'request';
  /** 5389: magic cookie present, 12-byte id; 3489: classic, 16-byte id (the cookie's place included). */
  readonly rfc: 5389 | 3489;
  /** Bytes 4..20 of the request (cookie + 12-byte id, or the classic 16-byte id). */
  readonly id: Buffer;
  /** The request carried a valid FINGERPRINT: the response carries one too. */
  readonly fingerprint: boolean;
}

export type StunParseResult =
  | StunBindingRequest
  | { readonly kind: 'ignore'; readonly reason: StunIgnoreReason };

const ignore = (reason: StunIgnoreReason): StunParseResult => ({ kind: 'ignore', reason });

/** Classifies one datagram. Never throws; reads only inside `buf`. */
export function parseStunRequest(buf: Buffer): StunParseResult {
  if (buf.length < STUN_HEADER_LEN) return ignore('short');
  if (buf.length > STUN_MAX_REQUEST_BYTES) return ignore('too-long');
  const type = buf.readUInt16BE(0);
  const len = buf.readUInt16BE(2);
  if ((type & 0xc000) !== 0 || len % 4 !== 0 || STUN_HEADER_LEN + len !== buf.length)
    return ignore('not-stun');
  if (type !== STUN_BINDING_REQUEST) return ignore('not-binding-request');
  const rfc = buf.readUInt32BE(4) === STUN_MAGIC_COOKIE ? 5389 : 3489;
  let fingerprint = false;
  for (let off = STUN_HEADER_LEN; off < buf.length; ) {
    if (off + 4 > buf.length) return ignore('attribute');
    const at = buf.readUInt16BE(off);
    const alen = buf.readUInt16BE(off + 2);
    const next = off + 4 + alen + ((4 - (alen % 4)) % 4);
    if (next > buf.length) return ignore('attribute');
    if (at === ATTR_CHANGE_REQUEST) {
      if (alen !== 4) return ignore('attribute');
      if ((buf.readUInt32BE(off + 4) & (CHANGE_IP | CHANGE_PORT)) !== 0) return ignore('change-request');
    } else if (at === ATTR_FINGERPRINT) {
      if (alen !== 4 || next !== buf.length) return ignore('fingerprint');
      const want = (crc32(buf.subarray(0, off)) ^ FINGERPRINT_XOR) >>> 0;
      if (buf.readUInt32BE(off + 4) !== want) return ignore('fingerprint');
      fingerprint = true;
    }
    off = next;
  }
  return { kind: 'request', rfc, id: buf.subarray(4, STUN_HEADER_LEN), fingerprint };
}

/** An RFC 5389 Binding request with no attributes and the given 12-byte transaction id. */
export function encodeBindingRequest(txId: Buffer): Buffer {
  if (txId.length !== 12) throw new RangeError(`stun: transaction id of ${txId.length} bytes`);
  const out = Buffer.alloc(STUN_HEADER_LEN);
  out.writeUInt16BE(STUN_BINDING_REQUEST, 0);
  out.writeUInt32BE(STUN_MAGIC_COOKIE, 4);
  txId.copy(out, 8);
  return out;
}

export interface StunAddress {
  /** 4 or 16 bytes. */
  readonly address: Buffer;
  readonly port: number;
}

/**
 * The Binding success response to `req` for a sender seen at `from`: XOR-MAPPED-ADDRESS (RFC 5389) or
 * MAPPED-ADDRESS (RFC 3489), then FINGERPRINT when the request had one.
 */
export function encodeBindingSuccess(req: StunBindingRequest, from: StunAddress): Buffer {
  const v6 = from.address.length === 16;
  if (!v6 && from.address.length !== 4) throw new RangeError(`stun: address of ${from.address.length} bytes`);
  const addrLen = 4 + from.address.length;
  const len = 4 + addrLen + (req.fingerprint ? 8 : 0);
  const out = Buffer.alloc(STUN_HEADER_LEN + len);
  out.writeUInt16BE(STUN_BINDING_SUCCESS, 0);
  out.writeUInt16BE(len, 2);
  req.id.copy(out, 4);
  let off = STUN_HEADER_LEN;
  out.writeUInt16BE(req.rfc === 5389 ? ATTR_XOR_MAPPED_ADDRESS : ATTR_MAPPED_ADDRESS, off);
  out.writeUInt16BE(addrLen, off + 2);
  out[off + 5] = v6 ? 0x02 : 0x01;
  if (req.rfc === 5389) {
    out.writeUInt16BE(from.port ^ (STUN_MAGIC_COOKIE >>> 16), off + 6);
    // The address XORed with the cookie followed by the transaction id (bytes 4.. of the header).
    for (let i = 0; i < from.address.length; i++)
      out[off + 8 + i] = (from.address[i] ?? 0) ^ (out[4 + i] ?? 0);
  } else {
    out.writeUInt16BE(from.port, off + 6);
    from.address.copy(out, off + 8);
  }
  off += 4 + addrLen;
  if (req.fingerprint) {
    out.writeUInt16BE(ATTR_FINGERPRINT, off);
    out.writeUInt16BE(4, off + 2);
    out.writeUInt32BE((crc32(out.subarray(0, off)) ^ FINGERPRINT_XOR) >>> 0, off + 4);
  }
  return out;
}

/** `a.b.c.d:port`, or `[x:x:x:x:x:x:x:x]:port` (IPv6, uncompressed hex groups). */
export function formatStunAddress(a: StunAddress): string {
  if (a.address.length === 4) return `${[...a.address].join('.')}:${a.port}`;
  const groups: string[] = [];
  for (let i = 0; i + 1 < a.address.length; i += 2) groups.push(a.address.readUInt16BE(i).toString(16));
  return `[${groups.join(':')}]:${a.port}`;
}

/**
 * True when `buf` looks like an RFC 5389 Binding success response (at least 20 bytes, type 0x0101, the magic
 * cookie): how a socket that also carries WireGuard and disco tells STUN answers apart. A WireGuard message
 * starts with 1..4 then three zero bytes, so it never matches.
 */
export function isStunBindingSuccess(buf: Uint8Array): boolean {
  return (
    buf.length >= STUN_HEADER_LEN &&
    buf[0] === 0x01 &&
    buf[1] === 0x01 &&
    buf[4] === 0x21 &&
    buf[5] === 0x12 &&
    buf[6] === 0xa4 &&
    buf[7] === 0x42
  );
}

/** Reads the mapped address out of a Binding success response (for tests and the agent's probe); null if absent. */
export function decodeMappedAddress(res: Buffer): StunAddress | null {
  if (res.length < STUN_HEADER_LEN || res.readUInt16BE(0) !== STUN_BINDING_SUCCESS) return null;
  const end = Math.min(res.length, STUN_HEADER_LEN + res.readUInt16BE(2));
  for (let off = STUN_HEADER_LEN; off + 4 <= end; ) {
    const at = res.readUInt16BE(off);
    const alen = res.readUInt16BE(off + 2);
    if (off + 4 + alen > end) return null;
    if ((at === ATTR_XOR_MAPPED_ADDRESS || at === ATTR_MAPPED_ADDRESS) && alen >= 8) {
      const n = res[off + 5] === 0x02 ? 16 : 4;
      if (alen < 4 + n) return null;
      const address = Buffer.from(res.subarray(off + 8, off + 8 + n));
      let port = res.readUInt16BE(off + 6);
      if (at === ATTR_XOR_MAPPED_ADDRESS) {
        port ^= STUN_MAGIC_COOKIE >>> 16;
        for (let i = 0; i < n; i++) address[i] = (address[i] ?? 0) ^ (res[4 + i] ?? 0);
      }
      return { address, port };
    }
    off += 4 + alen + ((4 - (alen % 4)) % 4);
  }
  return null;
}
