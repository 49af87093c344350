/**
 * ARQ segment codec (no I/O). Several segments are packed into one datagram, back to back.
 *
 * Segment header, 24 bytes, all fields LITTLE-endian (the KCP layout, with frg replaced by an incarnation tag):
 *
 *   off len field
 *    0   4  conv  u32  session id; a segment whose conv differs is dropped (counted as garbage)
 *    4   1  cmd   u8   81 PUSH, 82 ACK, 83 WASK (window probe), 84 WINS (window tell), 85 PUSHF (PUSH fragment)
 *    5   1  inc   u8   sender's incarnation tag, 1..255, random per session object; 0 = none. A tag that
 *                       changes mid-session means the peer restarted (see ArqSession)
 *    6   2  wnd   u16  sender's free receive window, in segments
 *    8   4  ts    u32  PUSH/PUSHF: send time (sender's clock, sender's unit: ours is 1/16 ms); ACK: the ts echoed
 *   12   4  sn    u32  PUSH/PUSHF: sequence number; ACK: the sn acknowledged; WASK/WINS: 0
 *   16   4  una   u32  every sn < una has been received (cumulative ack)
 *   20   4  len   u32  bytes of data that follow (0 for WASK/WINS; 0 or 4 for ACK, see below)
 *   24 len  data
 *
 * PUSHF carries part of one segment (sent when the MTU shrank below a segment already in flight). Its data starts
 * with a 4-byte fragment header, also little-endian:
 *
 *   off len field
 *    0   2  off    u16  offset of this piece inside the segment
 *    2   2  total  u16  length of the whole segment (1..65535)
 *    4   *  piece  len - 4 bytes
 *
 * ACK data, when len >= 4 (older senders send ACKs with len 0; bytes beyond the first 4 are ignored):
 *
 *   off len field
 *    0   4  delay  u32  microseconds the receiver held this ACK between the segment's arrival and sending it
 */

export const SEG_HEADER = 24;
export const FRAG_HEADER = 4;
/** Data bytes of an ACK that carries its delay (u32 LE microseconds). */
export const ACK_DELAY_BYTES = 4;
/** Largest ACK delay a u32 of microseconds carries (~71 minutes); longer delays are sent as this. */
export const MAX_ACK_DELAY_US = 0xffffffff;

export const CMD_PUSH = 81;
export const CMD_ACK = 82;
export const CMD_WASK = 83;
export const CMD_WINS = 84;
export const CMD_PUSHF = 85;

/** Largest data length accepted in one segment (a reassembled PUSHF is bounded by its u16 total too). */
export const MAX_SEGMENT_DATA = 65_535;
/** Datagram size bounds accepted by setMtu(): below MIN_MTU a fragment piece would be too small to be useful. */
export const MIN_MTU = 128;
export const MAX_MTU = 65_535;

export interface SegmentHeader {
  conv: number;
  cmd: number;
  /** Incarnation tag (0 = none). Optional when writing. */
  inc?: number;
  wnd: number;
  ts: number;
  sn: number;
  una: number;
  len: number;
}

export function writeHeader(buf: Buffer, off: number, h: SegmentHeader): void {
  buf.writeUInt32LE(h.conv >>> 0, off);
  buf[off + 4] = h.cmd;
  buf[off + 5] = h.inc ?? 0;
  buf.writeUInt16LE(h.wnd, off + 6);
  buf.writeUInt32LE(h.ts >>> 0, off + 8);
  buf.writeUInt32LE(h.sn >>> 0, off + 12);
  buf.writeUInt32LE(h.una >>> 0, off + 16);
  buf.writeUInt32LE(h.len >>> 0, off + 20);
}

/** Reads a header at `off` into `out`. The caller checks `off + SEG_HEADER <= buf.length` first. */
export function readHeader(buf: Buffer, off: number, out: SegmentHeader): void {
  out.conv = buf.readUInt32LE(off);
  out.cmd = buf[off + 4]!;
  out.inc = buf[off + 5]!;
  out.wnd = buf.readUInt16LE(off + 6);
  out.ts = buf.readUInt32LE(off + 8);
  out.sn = buf.readUInt32LE(off + 12);
  out.una = buf.readUInt32LE(off + 16);
  out.len = buf.readUInt32LE(off + 20);
}

/**
 * The ACK delay (ms) carried by an ACK segment whose header is at `off` and whose data is `len` bytes long
 * (checked to lie inside `buf`): 0 when it carries none (len < ACK_DELAY_BYTES, an older sender).
 */
export function readAckDelayMs(buf: Buffer, off: number, len: number): number {
  return len >= ACK_DELAY_BYTES ? buf.readUInt32LE(off + SEG_HEADER) / 1000 : 0;
}

/** Writes an ACK delay of `ms` milliseconds into `out` (ACK_DELAY_BYTES long): whole microseconds, clamped. */
export function writeAckDelay(out: Buffer, ms: number): void {
  const us = Math.round(ms * 1000);
  out.writeUInt32LE(us <= 0 ? 0 : us >= MAX_ACK_DELAY_US ? MAX_ACK_DELAY_US : us, 0);
}

export function isKnownCmd(cmd: number): boolean {
  return cmd >= CMD_PUSH && cmd <= CMD_PUSHF;
}

/** Signed distance a - b between two u32 sequence numbers or timestamps (wrap-around safe). */
export function seqDiff(a: number, b: number): number {
  return (a - b) | 0;
}

/**
 * The conv of a datagram's first segment, or undefined if it is too short to carry one. Lets a binding
 * route datagrams to the right session, or notice that the peer started a new one.
 */
export function peekConv(datagram: Uint8Array): number | undefined {
  if (datagram.length < SEG_HEADER) return undefined;
  return (datagram[0]! | (datagram[1]! << 8) | (datagram[2]! << 16) | (datagram[3]! << 24)) >>> 0;
}
