/**
 * Mux frame header (the yamux layout), 12 bytes, BIG-endian:
 *
 *   off len field
 *    0   1  version  u8   always 0
 *    1   1  type     u8   0 Data, 1 WindowUpdate, 2 Ping, 3 GoAway
 *    2   2  flags    u16  0x1 SYN, 0x2 ACK, 0x4 FIN, 0x8 RST (any combination on Data/WindowUpdate)
 *    4   4  streamId u32  odd = opened by the client side, even = server side, 0 = the session (Ping, GoAway)
 *    8   4  length   u32  Data: payload bytes that follow; WindowUpdate: credit delta added to the receiver's
 *                         send window (with RST: a reset code, RST_* below); Ping: opaque id echoed back;
 *                         GoAway: GOAWAY_* code
 *   12   *  payload  (Data only)
 */

export const FRAME_HEADER = 12;
export const MUX_VERSION = 0;

export const TYPE_DATA = 0;
export const TYPE_WINDOW_UPDATE = 1;
export const TYPE_PING = 2;
export const TYPE_GO_AWAY = 3;

export const FLAG_SYN = 0x1;
export const FLAG_ACK = 0x2;
export const FLAG_FIN = 0x4;
export const FLAG_RST = 0x8;

/** GoAway codes (yamux). */
export const GOAWAY_NORMAL = 0;
export const GOAWAY_PROTOCOL = 1;
export const GOAWAY_INTERNAL = 2;

/** Reset codes carried in the length field of an RST frame (this project's extension of yamux). */
export const RST_CANCEL = 0;
export const RST_STREAM_LIMIT = 1;
export const RST_REFUSED = 2;
export const RST_PROTOCOL = 3;
export const RST_IDLE_TIMEOUT = 4;
export const RST_INTERNAL = 5;
export const RST_UPSTREAM_FAILED = 6;

export const RST_NAMES: Record<number, string> = {
  [RST_CANCEL]: 'cancel',
  [RST_STREAM_LIMIT]: 'stream-limit',
  [RST_REFUSED]: 'refused',
  [RST_PROTOCOL]: 'protocol-error',
  [RST_IDLE_TIMEOUT]: 'idle-timeout',
  [RST_INTERNAL]: 'internal-error',
  [RST_UPSTREAM_FAILED]: 'upstream-failed',
};

export interface FrameHeader {
  type: number;
  flags: number;
  streamId: number;
  length: number;
}

export function encodeHeader(type: number, flags: number, streamId: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER);
  b[0] = MUX_VERSION;
  b[1] = type;
  b.writeUInt16BE(flags, 2);
  b.writeUInt32BE(streamId >>> 0, 4);
  b.writeUInt32BE(length >>> 0, 8);
  return b;
}
