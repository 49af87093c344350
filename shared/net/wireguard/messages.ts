/**
 * Codecs for the four WireGuard messages (reference §3). All header integers are little-endian;
 * byte 0 is the type and bytes 1..3 are reserved and must be zero (wireguard-go reads bytes 0..3 as
 * one u32 LE, so a non-zero reserved byte is an unknown type). Parsers check exact lengths and return
 * views into the input (no copies); writers fill a caller-provided or fresh buffer.
 */
import { needBytes, TunnelError } from '../../errors.js';

export const MSG_INITIATION = 1;
export const MSG_RESPONSE = 2;
export const MSG_COOKIE_REPLY = 3;
export const MSG_TRANSPORT = 4;

/*
 * Handshake initiation, exactly 148 bytes
 *   0   4  type = 01 00 00 00
 *   4   4  sender_index (u32 LE)
 *   8  32  unencrypted_ephemeral
 *  40  48  encrypted_static (32 + 16 tag)
 *  88  28  encrypted_timestamp (12 + 16 tag)
 * 116  16  mac1
 * 132  16  mac2
 */
export const INIT_SENDER = 4;
export const INIT_EPHEMERAL = 8;
export const INIT_STATIC = 40;
export const INIT_TIMESTAMP = 88;
export const INIT_MAC1 = 116;
export const INIT_MAC2 = 132;
export const INIT_LEN = 148;

/*
 * Handshake response, exactly 92 bytes
 *   0   4  type = 02 00 00 00
 *   4   4  sender_index (responder's index)
 *   8   4  receiver_index (initiator's sender_index)
 *  12  32  unencrypted_ephemeral
 *  44  16  encrypted_nothing (tag only)
 *  60  16  mac1
 *  76  16  mac2
 */
export const RESP_SENDER = 4;
export const RESP_RECEIVER = 8;
export const RESP_EPHEMERAL = 12;
export const RESP_EMPTY = 44;
export const RESP_MAC1 = 60;
export const RESP_MAC2 = 76;
export const RESP_LEN = 92;

/*
 * Cookie reply, exactly 64 bytes
 *   0   4  type = 03 00 00 00
 *   4   4  receiver_index (sender_index of the message answered)
 *   8  24  nonce
 *  32  32  encrypted_cookie (16 + 16 tag)
 */
export const COOKIE_RECEIVER = 4;
export const COOKIE_NONCE = 8;
export const COOKIE_ENCRYPTED = 32;
export const COOKIE_LEN = 64;

/*
 * Transport data, >= 32 bytes
 *   0   4  type = 04 00 00 00
 *   4   4  receiver_index (the index the receiving side picked)
 *   8   8  counter (u64 LE; also the AEAD nonce)
 *  16 n+16 AEAD(padded inner packet), no AAD
 */
export const DATA_RECEIVER = 4;
export const DATA_COUNTER = 8;
export const DATA_PAYLOAD = 16;
export const DATA_HEADER_LEN = 16;
export const DATA_MIN_LEN = 32;
export const KEEPALIVE_LEN = 32;

/** mac1 covers msg[0 : len-32], mac2 covers msg[0 : len-16]. */
export const MACS_TRAILER = 32;

export interface Initiation {
  readonly senderIndex: number;
  readonly ephemeral: Buffer;
  readonly encryptedStatic: Buffer;
  readonly encryptedTimestamp: Buffer;
  readonly mac1: Buffer;
  readonly mac2: Buffer;
}

export interface Response {
  readonly senderIndex: number;
  readonly receiverIndex: number;
  readonly ephemeral: Buffer;
  readonly encryptedNothing: Buffer;
  readonly mac1: Buffer;
  readonly mac2: Buffer;
}

export interface CookieReply {
  readonly receiverIndex: number;
  readonly nonce: Buffer;
  readonly encryptedCookie: Buffer;
}

export interface Transport {
  readonly receiverIndex: number;
  readonly counter: bigint;
  /** Ciphertext || tag: a view into the datagram. */
  readonly payload: Buffer;
}

/** The message type from the first 4 bytes (type + 3 zero reserved bytes). */
export function messageType(buf: Buffer): number {
  needBytes(buf, 4, 'WireGuard message');
  const t = buf.readUInt32LE(0);
  if (t < MSG_INITIATION || t > MSG_TRANSPORT) {
    throw new TunnelError(
      'WIRE_BAD_TYPE',
      `WireGuard message type word 0x${t.toString(16)}: expected 1..4 followed by three zero bytes`,
    );
  }
  return t;
}

function exact(buf: Buffer, type: number, len: number, what: string): void {
  needBytes(buf, len, what);
  if (buf.length !== len) {
    throw new TunnelError('WIRE_MALFORMED', `${what}: must be exactly ${len} bytes, got ${buf.length}`);
  }
  if (messageType(buf) !== type) {
    throw new TunnelError('WIRE_BAD_TYPE', `${what}: type ${buf[0]} is not ${type}`);
  }
}

export function parseInitiation(buf: Buffer): Initiation {
  exact(buf, MSG_INITIATION, INIT_LEN, 'handshake initiation');
  return {
    senderIndex: buf.readUInt32LE(INIT_SENDER),
    ephemeral: buf.subarray(INIT_EPHEMERAL, INIT_STATIC),
    encryptedStatic: buf.subarray(INIT_STATIC, INIT_TIMESTAMP),
    encryptedTimestamp: buf.subarray(INIT_TIMESTAMP, INIT_MAC1),
    mac1: buf.subarray(INIT_MAC1, INIT_MAC2),
    mac2: buf.subarray(INIT_MAC2, INIT_LEN),
  };
}

export function parseResponse(buf: Buffer): Response {
  exact(buf, MSG_RESPONSE, RESP_LEN, 'handshake response');
  return {
    senderIndex: buf.readUInt32LE(RESP_SENDER),
    receiverIndex: buf.readUInt32LE(RESP_RECEIVER),
    ephemeral: buf.subarray(RESP_EPHEMERAL, RESP_EMPTY),
    encryptedNothing: buf.subarray(RESP_EMPTY, RESP_MAC1),
    mac1: buf.subarray(RESP_MAC1, RESP_MAC2),
    mac2: buf.subarray(RESP_MAC2, RESP_LEN),
  };
}

export function parseCookieReply(buf: Buffer): CookieReply {
  exact(buf, MSG_COOKIE_REPLY, COOKIE_LEN, 'cookie reply');
  return {
    receiverIndex: buf.readUInt32LE(COOKIE_RECEIVER),
    nonce: buf.subarray(COOKIE_NONCE, COOKIE_ENCRYPTED),
    encryptedCookie: buf.subarray(COOKIE_ENCRYPTED, COOKIE_LEN),
  };
}

export function parseTransport(buf: Buffer): Transport {
  needBytes(buf, DATA_MIN_LEN, 'transport message');
  if (messageType(buf) !== MSG_TRANSPORT) {
    throw new TunnelError('WIRE_BAD_TYPE', `transport message: type ${buf[0]} is not ${MSG_TRANSPORT}`);
  }
  return {
    receiverIndex: buf.readUInt32LE(DATA_RECEIVER),
    counter: buf.readBigUInt64LE(DATA_COUNTER),
    payload: buf.subarray(DATA_PAYLOAD),
  };
}

function put(out: Buffer, off: number, len: number, src: Uint8Array, what: string): void {
  if (src.length !== len)
    throw new TunnelError('BAD_INPUT', `${what} must be ${len} bytes, got ${src.length}`);
  out.set(src, off);
}

/** Writes an initiation with zero mac1/mac2 (the cookie layer fills them). */
export function writeInitiation(m: Omit<Initiation, 'mac1' | 'mac2'>, out = Buffer.alloc(INIT_LEN)): Buffer {
  out.fill(0, 0, INIT_LEN);
  out.writeUInt32LE(MSG_INITIATION, 0);
  out.writeUInt32LE(m.senderIndex >>> 0, INIT_SENDER);
  put(out, INIT_EPHEMERAL, 32, m.ephemeral, 'ephemeral');
  put(out, INIT_STATIC, 48, m.encryptedStatic, 'encrypted_static');
  put(out, INIT_TIMESTAMP, 28, m.encryptedTimestamp, 'encrypted_timestamp');
  return out;
}

export function writeResponse(m: Omit<Response, 'mac1' | 'mac2'>, out = Buffer.alloc(RESP_LEN)): Buffer {
  out.fill(0, 0, RESP_LEN);
  out.writeUInt32LE(MSG_RESPONSE, 0);
  out.writeUInt32LE(m.senderIndex >>> 0, RESP_SENDER);
  out.writeUInt32LE(m.receiverIndex >>> 0, RESP_RECEIVER);
  put(out, RESP_EPHEMERAL, 32, m.ephemeral, 'ephemeral');
  put(out, RESP_EMPTY, 16, m.encryptedNothing, 'encrypted_nothing');
  return out;
}

export function writeCookieReply(m: CookieReply, out = Buffer.alloc(COOKIE_LEN)): Buffer {
  out.writeUInt32LE(MSG_COOKIE_REPLY, 0);
  out.writeUInt32LE(m.receiverIndex >>> 0, COOKIE_RECEIVER);
  put(out, COOKIE_NONCE, 24, m.nonce, 'nonce');
  put(out, COOKIE_ENCRYPTED, 32, m.encryptedCookie, 'encrypted_cookie');
  return out;
}

const TWO_32 = 0x1_0000_0000;

/** Writes the 16-byte transport header at the start of `out`. A number counter must be a safe integer. */
export function writeTransportHeader(out: Buffer, receiverIndex: number, counter: number | bigint): void {
  out.writeUInt32LE(MSG_TRANSPORT, 0);
  out.writeUInt32LE(receiverIndex >>> 0, DATA_RECEIVER);
  if (typeof counter === 'number') {
    out.writeUInt32LE(counter % TWO_32, DATA_COUNTER);
    out.writeUInt32LE(Math.floor(counter / TWO_32), DATA_COUNTER + 4);
  } else {
    out.writeBigUInt64LE(counter, DATA_COUNTER);
  }
}

/**
 * The transport counter of a (length-checked) transport message: a number while it is a safe integer
 * (below 2^53, i.e. always in practice), else a bigint. Cheaper than a bigint on the hot path.
 */
export function readTransportCounter(buf: Buffer): number | bigint {
  const hi = buf.readUInt32LE(DATA_COUNTER + 4);
  if (hi < 0x20_0000) return hi * TWO_32 + buf.readUInt32LE(DATA_COUNTER);
  return buf.readBigUInt64LE(DATA_COUNTER);
}
