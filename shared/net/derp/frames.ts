/**
 * DERP-like relay frames (codec only, no I/O). Wire-compatible with Tailscale DERP protocol version 2 for
 * every frame listed here. Every frame, in both directions:
 *
 *   +--------+---------------------+----------------------+
 *   | type:1 | length:4 (u32 BE)   | body: `length` bytes |
 *   +--------+---------------------+----------------------+
 *
 * `length` excludes the 5-byte header and is at most MAX_FRAME_LEN (64 KiB + 32). Bodies:
 *
 *   0x01 ServerKey     S->C  magic[8] "DERP🔑" | serverPub[32] | challenge[16]  (>= 40 B; extra bytes ignored)
 *   0x02 ClientInfo    C->S  clientPub[32] | nonce[24] | box(JSON ClientInfo)   (see handshake.ts)
 *   0x03 ServerInfo    S->C  nonce[24] | box(JSON ServerInfo)
 *   0x04 SendPacket    C->S  dstKey[32] | payload[0..65535]
 *   0x05 RecvPacket    S->C  srcKey[32] | payload[0..65535]
 *   0x06 KeepAlive     S->C  empty
 *   0x07 NotePreferred C->S  preferred[1]  (accepted and ignored)
 *   0x08 PeerGone      S->C  peerKey[32] | reason[1]  (0x00 disconnected, 0x01 not here)
 *   0x09 PeerPresent   S->C  peerKey[32] [| ip[16] | port[2 BE] [| flags[1]]]
 *   0x12 Ping          both  data[8]  (8..1000 accepted; the first 8 are echoed)
 *   0x13 Pong          both  data[8]
 *   0x14 Health        S->C  UTF-8 problem text; empty clears it
 *   0x15 Restarting    S->C  reconnectInMs[4 BE] | tryForMs[4 BE]
 *
 * Unknown types are skipped by both sides (forward compatibility).
 */
import { TunnelError } from '../../errors.js';
import { KEY_LEN } from '../../keys.js';
import { growPacket } from '../buffers/packet-room.js';

/** Protocol version carried in ClientInfo/ServerInfo JSON. 2: RecvPacket starts with the source key. */
export const PROTOCOL_VERSION = 2;

export const FRAME_HEADER_LEN = 5;
/** Largest packet payload in SendPacket/RecvPacket. */
export const MAX_PACKET_LEN = 65_535;
/** Largest frame body accepted from the wire (header excluded): 64 KiB + 32. A longer one closes the connection. */
export const MAX_FRAME_LEN = 64 * 1024 + KEY_LEN;

/** "DERP🔑" */
export const MAGIC = Buffer.from([0x44, 0x45, 0x52, 0x50, 0xf0, 0x9f, 0x94, 0x91]);
export const CHALLENGE_LEN = 16;
export const NONCE_LEN = 24;
export const PING_LEN = 8;
const PING_MAX = 1000;
const SERVER_KEY_MIN = MAGIC.length + KEY_LEN;
const SERVER_KEY_MAX = 1024;
const RESTARTING_LEN = 8;

export const FrameType = {
  ServerKey: 0x01,
  ClientInfo: 0x02,
  ServerInfo: 0x03,
  SendPacket: 0x04,
  RecvPacket: 0x05,
  KeepAlive: 0x06,
  NotePreferred: 0x07,
  PeerGone: 0x08,
  PeerPresent: 0x09,
  Ping: 0x12,
  Pong: 0x13,
  Health: 0x14,
  Restarting: 0x15,
} as const;
export type FrameTypeValue = (typeof FrameType)[keyof typeof FrameType];

export const PeerGoneReason = { Disconnected: 0x00, NotHere: 0x01 } as const;

function protocolError(what: string): TunnelError {
  return new TunnelError('DERP_PROTOCOL', what);
}

/** Allocates a frame with its header written; the caller fills bytes 5.. */
export function allocFrame(type: number, bodyLen: number): Buffer {
  const f = Buffer.allocUnsafe(FRAME_HEADER_LEN + bodyLen);
  f[0] = type;
  f.writeUInt32BE(bodyLen, 1);
  return f;
}

/** The body of a whole frame (a view). */
export function frameBody(frame: Buffer): Buffer {
  return frame.subarray(FRAME_HEADER_LEN);
}

// --- ServerKey ------------------------------------------------------------------------------------

export function encodeServerKey(serverPub: Uint8Array, challenge: Uint8Array): Buffer {
  const f = allocFrame(FrameType.ServerKey, MAGIC.length + KEY_LEN + challenge.length);
  MAGIC.copy(f, FRAME_HEADER_LEN);
  f.set(serverPub, FRAME_HEADER_LEN + MAGIC.length);
  f.set(challenge, FRAME_HEADER_LEN + MAGIC.length + KEY_LEN);
  return f;
}

export interface ServerKeyBody {
  readonly serverKey: Buffer;
  /** Empty when the server sent none (a plain DERP server). */
  readonly challenge: Buffer;
}

export function decodeServerKey(body: Buffer): ServerKeyBody {
  if (body.length < SERVER_KEY_MIN || body.length > SERVER_KEY_MAX) {
    throw protocolError(
      `server key frame is ${body.length} bytes, expected ${SERVER_KEY_MIN}..${SERVER_KEY_MAX}`,
    );
  }
  if (!MAGIC.equals(body.subarray(0, MAGIC.length))) throw protocolError('server key frame has a bad magic');
  const serverKey = body.subarray(MAGIC.length, SERVER_KEY_MIN);
  const rest = body.subarray(SERVER_KEY_MIN);
  return {
    serverKey,
    challenge: rest.length >= CHALLENGE_LEN ? rest.subarray(0, CHALLENGE_LEN) : rest.subarray(0, 0),
  };
}

// --- Send/Recv packet -----------------------------------------------------------------------------

/**
 * Room a sender reserves before a packet so that its SendPacket frame header (5) and destination key (32)
 * are written in place (shared/net/buffers/packet-room.ts).
 */
export const SEND_PACKET_HEADROOM = FRAME_HEADER_LEN + KEY_LEN;

function checkPacketLen(payload: Uint8Array): void {
  if (payload.length > MAX_PACKET_LEN) {
    throw new TunnelError('WIRE_TOO_LARGE', `packet is ${payload.length} bytes, limit ${MAX_PACKET_LEN}`);
  }
}

function encodeKeyed(type: number, key: Uint8Array, payload: Uint8Array): Buffer {
  checkPacketLen(payload);
  const f = allocFrame(type, KEY_LEN + payload.length);
  f.set(key, FRAME_HEADER_LEN);
  f.set(payload, FRAME_HEADER_LEN + KEY_LEN);
  return f;
}

/**
 * The SendPacket frame for `payload` built in place in the room granted before it (a view ending where
 * `payload` ends), or null when `payload` has no such grant. Same bytes as encodeSendPacket.
 */
export function encodeSendPacketInPlace(dst: Uint8Array, payload: Uint8Array): Buffer | null {
  checkPacketLen(payload);
  if (dst.length !== KEY_LEN) return null;
  const f = growPacket(payload, SEND_PACKET_HEADROOM, 0);
  if (!f) return null;
  f[0] = FrameType.SendPacket;
  f.writeUInt32BE(KEY_LEN + payload.length, 1);
  f.set(dst, FRAME_HEADER_LEN);
  return f;
}

/** A SendPacket frame: in place when `payload` was granted SEND_PACKET_HEADROOM, else a new buffer. */
export function encodeSendPacket(dst: Uint8Array, payload: Uint8Array): Buffer {
  return encodeSendPacketInPlace(dst, payload) ?? encodeKeyed(FrameType.SendPacket, dst, payload);
}

export function encodeRecvPacket(src: Uint8Array, payload: Uint8Array): Buffer {
  return encodeKeyed(FrameType.RecvPacket, src, payload);
}

export interface KeyedPacket {
  /** dst for SendPacket, src for RecvPacket (views into the frame). */
  readonly key: Buffer;
  readonly payload: Buffer;
}

/** Decodes the body of a SendPacket or RecvPacket frame into views. */
export function decodePacket(body: Buffer): KeyedPacket {
  if (body.length < KEY_LEN) throw protocolError(`packet frame is ${body.length} bytes, need >= ${KEY_LEN}`);
  if (body.length - KEY_LEN > MAX_PACKET_LEN) {
    throw protocolError(`packet payload is ${body.length - KEY_LEN} bytes, limit ${MAX_PACKET_LEN}`);
  }
  return { key: body.subarray(0, KEY_LEN), payload: body.subarray(KEY_LEN) };
}

// --- small frames ---------------------------------------------------------------------------------

export const KEEPALIVE_FRAME: Buffer = allocFrame(FrameType.KeepAlive, 0);

export function encodePing(type: typeof FrameType.Ping | typeof FrameType.Pong, data: Uint8Array): Buffer {
  if (data.length !== PING_LEN)
    throw protocolError(`ping data is ${data.length} bytes, expected ${PING_LEN}`);
  const f = allocFrame(type, PING_LEN);
  f.set(data, FRAME_HEADER_LEN);
  return f;
}

/** Ping/Pong body: 8..1000 bytes accepted, the first 8 returned (a view). */
export function decodePing(body: Buffer): Buffer {
  if (body.length < PING_LEN || body.length > PING_MAX) {
    throw protocolError(`ping frame is ${body.length} bytes, expected ${PING_LEN}..${PING_MAX}`);
  }
  return body.subarray(0, PING_LEN);
}

export function encodePeerGone(peer: Uint8Array, reason: number): Buffer {
  const f = allocFrame(FrameType.PeerGone, KEY_LEN + 1);
  f.set(peer, FRAME_HEADER_LEN);
  f[FRAME_HEADER_LEN + KEY_LEN] = reason;
  return f;
}

export interface PeerGoneBody {
  readonly peer: Buffer;
  readonly reason: number;
}

/** A missing reason byte (older servers) means Disconnected. */
export function decodePeerGone(body: Buffer): PeerGoneBody {
  if (body.length < KEY_LEN)
    throw protocolError(`peer gone frame is ${body.length} bytes, need >= ${KEY_LEN}`);
  return { peer: body.subarray(0, KEY_LEN), reason: body[KEY_LEN] ?? PeerGoneReason.Disconnected };
}

export function encodePeerPresent(peer: Uint8Array): Buffer {
  const f = allocFrame(FrameType.PeerPresent, KEY_LEN);
  f.set(peer, FRAME_HEADER_LEN);
  return f;
}

export function decodePeerPresent(body: Buffer): Buffer {
  if (body.length < KEY_LEN)
    throw protocolError(`peer present frame is ${body.length} bytes, need >= ${KEY_LEN}`);
  return body.subarray(0, KEY_LEN);
}

export function encodeHealth(problem: string): Buffer {
  const text = Buffer.from(problem, 'utf8');
  const f = allocFrame(FrameType.Health, text.length);
  text.copy(f, FRAME_HEADER_LEN);
  return f;
}

export function decodeHealth(body: Buffer): string {
  return body.toString('utf8');
}

export interface RestartingBody {
  readonly reconnectInMs: number;
  readonly tryForMs: number;
}

export function encodeRestarting(r: RestartingBody): Buffer {
  const f = allocFrame(FrameType.Restarting, RESTARTING_LEN);
  f.writeUInt32BE(r.reconnectInMs >>> 0, FRAME_HEADER_LEN);
  f.writeUInt32BE(r.tryForMs >>> 0, FRAME_HEADER_LEN + 4);
  return f;
}

export function decodeRestarting(body: Buffer): RestartingBody {
  if (body.length < RESTARTING_LEN) {
    throw protocolError(`restarting frame is ${body.length} bytes, need >= ${RESTARTING_LEN}`);
  }
  return { reconnectInMs: body.readUInt32BE(0), tryForMs: body.readUInt32BE(4) };
}

export function encodeNotePreferred(preferred: boolean): Buffer {
  const f = allocFrame(FrameType.NotePreferred, 1);
  f[FRAME_HEADER_LEN] = preferred ? 1 : 0;
  return f;
}
