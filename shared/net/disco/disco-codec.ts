/**
 * Disco messages: the small sealed messages two WireGuard peers exchange to find and confirm a direct UDP
 * path (docs/PROTOCOL.md "Disco messages"). They travel as UDP datagrams on the tunnel's socket and as DERP
 * SendPacket payloads, and are told apart from WireGuard by their first six bytes. No I/O.
 *
 *   magic(6) | sender public key(32) | nonce(24) | box(payload)          box = tag(16) | ciphertext
 *   payload  = type(1) | version(1) | txid(12) | sentAt(8) | body
 *     ping (1)           body empty
 *     pong (2)           the ping's txid; body = ip(16) | port(2): where a UDP ping came from, as its receiver
 *                        saw it; empty for a ping that came over the relay
 *     call-me-maybe (3)  body = N x (ip(16) | port(2)), 0 <= N <= 16: the sender's candidate addresses
 *     probe (4)          body = padding (any bytes): a path MTU probe (DPLPMTUD, RFC 8899), its size the whole
 *                        datagram's (DISCO_MIN_LEN .. DISCO_MAX_PROBE_LEN); over UDP only
 *     probe-ack (5)      the probe's txid; body = size(4): the length of the probe datagram as it arrived
 *
 * The box is NaCl crypto_box between the sender's and the receiver's WireGuard static keys (disco-box.ts):
 * only the two peers can make or read one, so a relay in between can neither read nor forge candidates.
 * Addresses are IPv6, IPv4 as ::ffff:a.b.c.d; sentAt is the sender's wall clock in ms (replay-guard.ts).
 * Every length is checked before it is read; a datagram that fails a check is classified by a drop
 * reason, never thrown.
 */
import { randomBytes } from 'node:crypto';
import { TunnelError } from '../../errors.js';
import { bytesToIp, IP_BYTES_LEN, ipToBytes } from '../ip/ip-bytes.js';
import { BOX_MAC_LEN, BOX_NONCE_LEN, type DiscoBox, defaultDiscoBox } from './disco-box.js';

/** 0xee then "disco": a WireGuard message starts 1..4 then three zeros; STUN's top two bits are zero. */
export const DISCO_MAGIC: Buffer = Buffer.from([0xee, 0x64, 0x69, 0x73, 0x63, 0x6f]);
export const DISCO_KEY_LEN = 32;
export const DISCO_TXID_LEN = 12;
/** magic | sender key | nonce. */
export const DISCO_HEADER_LEN = DISCO_MAGIC.length + DISCO_KEY_LEN + BOX_NONCE_LEN;
/** type | version | txid | sentAt. */
export const DISCO_PAYLOAD_HEADER_LEN = 1 + 1 + DISCO_TXID_LEN + 8;
export const DISCO_VERSION = 0;
/** ip(16) | port(2). */
export const DISCO_ADDRESS_LEN = IP_BYTES_LEN + 2;
/** Most candidates one call-me-maybe carries. */
export const DISCO_MAX_CANDIDATES = 16;
/** A ping: the shortest disco message (100 bytes). */
export const DISCO_MIN_LEN = DISCO_HEADER_LEN + BOX_MAC_LEN + DISCO_PAYLOAD_HEADER_LEN;
/** A call-me-maybe with DISCO_MAX_CANDIDATES candidates: the longest message but a probe (388 bytes). */
export const DISCO_MAX_LEN = DISCO_MIN_LEN + DISCO_MAX_CANDIDATES * DISCO_ADDRESS_LEN;
/** The longest probe: the largest UDP payload over IPv4 (65,535 - 20 - 8). */
export const DISCO_MAX_PROBE_LEN = 65_507;
/** Bytes a sealed datagram adds to its payload: magic, sender key, nonce and the box's tag. */
export const DISCO_SEAL_OVERHEAD = DISCO_HEADER_LEN + BOX_MAC_LEN;
const PROBE_ACK_BODY_LEN = 4;

const TYPE_CODES = { ping: 1, pong: 2, 'call-me-maybe': 3, probe: 4, 'probe-ack': 5 } as const;
export type DiscoType = keyof typeof TYPE_CODES;

export interface DiscoAddress {
  /** IPv4 dotted or IPv6 text. */
  readonly host: string;
  readonly port: number;
}

interface DiscoCommon {
  /** 12 bytes; a pong carries its ping's. */
  readonly txid: Buffer;
  /** Sender's wall clock, ms since the epoch. */
  readonly sentAt: number;
}
export interface DiscoPing extends DiscoCommon {
  readonly type: 'ping';
}
export interface DiscoPong extends DiscoCommon {
  readonly type: 'pong';
  /** Where a UDP ping came from, as the pong's sender saw it; absent for a ping over the relay. */
  readonly observed?: DiscoAddress;
}
export interface DiscoCallMeMaybe extends DiscoCommon {
  readonly type: 'call-me-maybe';
  readonly candidates: readonly DiscoAddress[];
}
export interface DiscoProbe extends DiscoCommon {
  readonly type: 'probe';
  /** Length of the whole sealed datagram (its padding makes it so). */
  readonly size: number;
}
export interface DiscoProbeAck extends DiscoCommon {
  readonly type: 'probe-ack';
  /** Length of the probe datagram as it arrived. */
  readonly size: number;
}
export type DiscoMessage = DiscoPing | DiscoPong | DiscoCallMeMaybe | DiscoProbe | DiscoProbeAck;

/**
 * Why a disco datagram was dropped, one counter each. The codec gives the first group, the replay guard
 * (replay-guard.ts) the second, the receiving side (who expected what, over which carrier) the third.
 */
export const DISCO_DROP_REASONS = [
  'not-disco', // no disco magic (the caller should have sent it to WireGuard)
  'short', // under DISCO_MIN_LEN, or a magic with nothing after it
  'too-long', // over DISCO_MAX_PROBE_LEN, or a message other than a probe over DISCO_MAX_LEN
  'unknown-sender', // the sender key is not a peer of the receiver (or not a usable key)
  'auth', // the box does not open: wrong key, bit flipped, forged
  'bad-type', // a type other than ping, pong, call-me-maybe
  'bad-version', // a version other than DISCO_VERSION
  'bad-length', // the body's length does not fit the type
  'bad-address', // port 0 in an address
  'stale', // sentAt older than the replay window
  'future', // sentAt ahead of the receiver's clock by more than the window
  'replay', // txid already seen from this sender, or older than what the guard still remembers
  'unexpected-pong', // a pong for no ping in flight, a probe-ack for no probe in flight
  'wrong-carrier', // a call-me-maybe over UDP (it must come over the relay), a probe or its ack over the relay
  'sender-mismatch', // over the relay, the sealed sender is not the relay's source key
  'rate-limited', // a call-me-maybe over the peer's budget (shared/net/tunnel-endpoint/disco-limits.ts)
  'not-owner', // over UDP, from a peer this node does not answer there now (a relay replica not holding its session)
] as const;
export type DiscoDropReason = (typeof DISCO_DROP_REASONS)[number];

/** A zero counter per drop reason. */
export function emptyDropCounts(): Record<DiscoDropReason, number> {
  return {
    'not-disco': 0,
    short: 0,
    'too-long': 0,
    'unknown-sender': 0,
    auth: 0,
    'bad-type': 0,
    'bad-version': 0,
    'bad-length': 0,
    'bad-address': 0,
    stale: 0,
    future: 0,
    replay: 0,
    'unexpected-pong': 0,
    'wrong-carrier': 0,
    'sender-mismatch': 0,
    'rate-limited': 0,
    'not-owner': 0,
  };
}

export type DiscoOpenResult =
  | { readonly ok: true; readonly sender: Buffer; readonly message: DiscoMessage }
  | { readonly ok: false; readonly reason: DiscoDropReason };

/** True when `buf` starts with the disco magic: it goes to the disco handler, never to WireGuard. */
export function isDiscoMessage(buf: Uint8Array): boolean {
  if (buf.length < DISCO_MAGIC.length) return false;
  for (let i = 0; i < DISCO_MAGIC.length; i++) if (buf[i] !== DISCO_MAGIC[i]) return false;
  return true;
}

/** A fresh random transaction id. */
export function newTxid(): Buffer {
  return randomBytes(DISCO_TXID_LEN);
}

function writeAddress(out: Buffer, at: number, a: DiscoAddress): void {
  const ip = ipToBytes(a.host);
  if (!ip)
    throw new TunnelError('BAD_INPUT', `disco: address ${JSON.stringify(a.host)} is not an IP address`);
  if (!Number.isInteger(a.port) || a.port < 1 || a.port > 65_535)
    throw new TunnelError('BAD_INPUT', `disco: port ${a.port} is not in 1..65535`);
  ip.copy(out, at);
  out.writeUInt16BE(a.port, at + IP_BYTES_LEN);
}

function readAddress(buf: Buffer, at: number): DiscoAddress | null {
  const port = buf.readUInt16BE(at + IP_BYTES_LEN);
  if (port === 0) return null;
  return { host: bytesToIp(buf.subarray(at, at + IP_BYTES_LEN)), port };
}

function bodyAddresses(m: DiscoMessage): readonly DiscoAddress[] {
  if (m.type === 'pong') return m.observed ? [m.observed] : [];
  if (m.type === 'call-me-maybe') return m.candidates;
  return [];
}

/** The plaintext payload of `m`. Throws BAD_INPUT for a message no peer would accept (a bug in the caller). */
export function encodeDiscoPayload(m: DiscoMessage): Buffer {
  if (m.txid.length !== DISCO_TXID_LEN)
    throw new TunnelError('BAD_INPUT', `disco: txid of ${m.txid.length} bytes, not ${DISCO_TXID_LEN}`);
  if (!Number.isSafeInteger(m.sentAt) || m.sentAt < 0)
    throw new TunnelError('BAD_INPUT', `disco: sentAt ${m.sentAt} is not a non-negative integer`);
  if (m.type === 'probe' || m.type === 'probe-ack') return encodeProbe(m);
  const addresses = bodyAddresses(m);
  if (addresses.length > DISCO_MAX_CANDIDATES)
    throw new TunnelError(
      'BAD_INPUT',
      `disco: ${addresses.length} candidates, at most ${DISCO_MAX_CANDIDATES} fit one call-me-maybe`,
    );
  const out = payloadHeader(m, addresses.length * DISCO_ADDRESS_LEN);
  addresses.forEach((a, i) => {
    writeAddress(out, DISCO_PAYLOAD_HEADER_LEN + i * DISCO_ADDRESS_LEN, a);
  });
  return out;
}

/** A payload of `bodyLen` zero bytes after `m`'s header. */
function payloadHeader(m: DiscoMessage, bodyLen: number): Buffer {
  const out = Buffer.alloc(DISCO_PAYLOAD_HEADER_LEN + bodyLen);
  out[0] = TYPE_CODES[m.type];
  out[1] = DISCO_VERSION;
  m.txid.copy(out, 2);
  out.writeBigUInt64BE(BigInt(m.sentAt), 2 + DISCO_TXID_LEN);
  return out;
}

/** A probe padded to its size once sealed, or an ack carrying the size. */
function encodeProbe(m: DiscoProbe | DiscoProbeAck): Buffer {
  if (!Number.isInteger(m.size) || m.size < DISCO_MIN_LEN || m.size > DISCO_MAX_PROBE_LEN)
    throw new TunnelError(
      'BAD_INPUT',
      `disco: probe size ${m.size} is not in ${DISCO_MIN_LEN}..${DISCO_MAX_PROBE_LEN}`,
    );
  if (m.type === 'probe') return payloadHeader(m, m.size - DISCO_MIN_LEN);
  const out = payloadHeader(m, PROBE_ACK_BODY_LEN);
  out.writeUInt32BE(m.size, DISCO_PAYLOAD_HEADER_LEN);
  return out;
}

type PayloadResult = { ok: true; message: DiscoMessage } | { ok: false; reason: DiscoDropReason };

function decodeAddresses(body: Buffer): DiscoAddress[] | null {
  const out: DiscoAddress[] = [];
  for (let at = 0; at + DISCO_ADDRESS_LEN <= body.length; at += DISCO_ADDRESS_LEN) {
    const a = readAddress(body, at);
    if (!a) return null;
    out.push(a);
  }
  return out;
}

const TYPE_BY_CODE: Readonly<Record<number, DiscoType>> = {
  1: 'ping',
  2: 'pong',
  3: 'call-me-maybe',
  4: 'probe',
  5: 'probe-ack',
};

/** A probe (its size: the sealed datagram's length) or a probe ack (the size it carries). */
function decodeProbe(type: 'probe' | 'probe-ack', txid: Buffer, sentAt: number, body: Buffer): PayloadResult {
  const sealed = DISCO_PAYLOAD_HEADER_LEN + body.length + DISCO_SEAL_OVERHEAD;
  if (type === 'probe') return { ok: true, message: { type, txid, sentAt, size: sealed } };
  if (body.length !== PROBE_ACK_BODY_LEN) return { ok: false, reason: 'bad-length' };
  const size = body.readUInt32BE(0);
  if (size < DISCO_MIN_LEN || size > DISCO_MAX_PROBE_LEN) return { ok: false, reason: 'bad-length' };
  return { ok: true, message: { type, txid, sentAt, size } };
}

/** The message in a plaintext payload, or why it is refused. */
export function decodeDiscoPayload(p: Buffer): PayloadResult {
  if (p.length < DISCO_PAYLOAD_HEADER_LEN) return { ok: false, reason: 'short' };
  const code = p[0];
  const type = TYPE_BY_CODE[code ?? 0];
  if (!type) return { ok: false, reason: 'bad-type' };
  if (p[1] !== DISCO_VERSION) return { ok: false, reason: 'bad-version' };
  const txid = Buffer.from(p.subarray(2, 2 + DISCO_TXID_LEN));
  const sentAt = Number(p.readBigUInt64BE(2 + DISCO_TXID_LEN));
  if (!Number.isSafeInteger(sentAt)) return { ok: false, reason: 'bad-length' };
  const body = p.subarray(DISCO_PAYLOAD_HEADER_LEN);
  if (type === 'probe' || type === 'probe-ack') return decodeProbe(type, txid, sentAt, body);
  if (p.length + DISCO_SEAL_OVERHEAD > DISCO_MAX_LEN) return { ok: false, reason: 'too-long' };
  const bodyOk =
    type === 'ping'
      ? body.length === 0
      : type === 'pong'
        ? body.length === 0 || body.length === DISCO_ADDRESS_LEN
        : body.length % DISCO_ADDRESS_LEN === 0 && body.length <= DISCO_MAX_CANDIDATES * DISCO_ADDRESS_LEN;
  if (!bodyOk) return { ok: false, reason: 'bad-length' };
  const addresses = decodeAddresses(body);
  if (!addresses) return { ok: false, reason: 'bad-address' };
  if (type === 'ping') return { ok: true, message: { type, txid, sentAt } };
  if (type === 'pong') {
    const observed = addresses[0];
    return { ok: true, message: observed ? { type, txid, sentAt, observed } : { type, txid, sentAt } };
  }
  return { ok: true, message: { type, txid, sentAt, candidates: addresses } };
}

export interface DiscoSealOptions {
  /** The sender's WireGuard public key (32 bytes). */
  readonly sender: Uint8Array;
  /** boxSharedKey(receiver public, sender private), usually from a DiscoKeyring. */
  readonly key: Uint8Array;
  /** 24 bytes; random when absent (tests pass one). */
  readonly nonce?: Uint8Array;
  readonly box?: DiscoBox;
}

/** The datagram carrying `m` sealed from `sender` to the owner of the other half of `key`. */
export function sealDisco(m: DiscoMessage, o: DiscoSealOptions): Buffer {
  if (o.sender.length !== DISCO_KEY_LEN)
    throw new TunnelError('BAD_INPUT', `disco: sender key of ${o.sender.length} bytes, not 32`);
  const nonce = o.nonce ?? randomBytes(BOX_NONCE_LEN);
  if (nonce.length !== BOX_NONCE_LEN)
    throw new TunnelError('BAD_INPUT', `disco: nonce of ${nonce.length} bytes, not ${BOX_NONCE_LEN}`);
  const sealed = (o.box ?? defaultDiscoBox()).seal(encodeDiscoPayload(m), nonce, o.key);
  return Buffer.concat([DISCO_MAGIC, o.sender, nonce, sealed]);
}

export interface DiscoOpenOptions {
  /** The box key for a sender, or null when the sender is not a peer (the message is then dropped). */
  keyFor(sender: Buffer): Uint8Array | null;
  readonly box?: DiscoBox;
}

/** Authenticates and decodes one datagram. Never throws; reads only inside `datagram`. */
export function openDisco(datagram: Uint8Array, o: DiscoOpenOptions): DiscoOpenResult {
  if (!isDiscoMessage(datagram)) return { ok: false, reason: 'not-disco' };
  if (datagram.length < DISCO_MIN_LEN) return { ok: false, reason: 'short' };
  // A probe may be long; any other message over DISCO_MAX_LEN is refused once its type is known.
  if (datagram.length > DISCO_MAX_PROBE_LEN) return { ok: false, reason: 'too-long' };
  const buf = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.length);
  const keyAt = DISCO_MAGIC.length;
  const sender = Buffer.from(buf.subarray(keyAt, keyAt + DISCO_KEY_LEN));
  const key = o.keyFor(sender);
  if (!key) return { ok: false, reason: 'unknown-sender' };
  const nonce = buf.subarray(keyAt + DISCO_KEY_LEN, DISCO_HEADER_LEN);
  const payload = (o.box ?? defaultDiscoBox()).open(buf.subarray(DISCO_HEADER_LEN), nonce, key);
  if (!payload) return { ok: false, reason: 'auth' };
  const r = decodeDiscoPayload(payload);
  return r.ok ? { ok: true, sender, message: r.message } : r;
}
