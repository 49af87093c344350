/**
 * Transport data (reference §6, §7): one datagram per inner packet, padded with zeros to a multiple of
 * 16 but never past the MTU, sealed (header, then ciphertext || tag) with the keypair's send key and
 * counter as the nonce; opened in place on receive. No AAD.
 *
 * When the inner packet is a view granted room (shared/net/buffers/packet-room.ts) of at least TRANSPORT_HEADROOM
 * before and (padding + tag) after it, the datagram is built around it in place: header written in
 * front, padding and tag behind, the packet encrypted where it lies. Otherwise a new buffer is allocated.
 * Both paths produce the same bytes.
 */

import { growPacket, type PacketRoom } from '../buffers/packet-room.js';
import { PADDING_MULTIPLE } from './constants.js';
import { AEAD_TAG_LEN, type Aead } from './crypto/aead.js';
import type { Keypair } from './keypair.js';
import { DATA_COUNTER, DATA_HEADER_LEN, writeTransportHeader } from './messages.js';

/** Room a sender reserves before an inner packet for the transport header (sealed in place). */
export const TRANSPORT_HEADROOM = DATA_HEADER_LEN;
/** Room a sender reserves after an inner packet: padding (at most 15) and the Poly1305 tag. */
export const TRANSPORT_TAILROOM = PADDING_MULTIPLE - 1 + AEAD_TAG_LEN;
/** Bytes a transport datagram adds to an inner packet of the MTU (header and tag; padding stops at the MTU). */
export const TRANSPORT_OVERHEAD = DATA_HEADER_LEN + AEAD_TAG_LEN;

/**
 * What inner packets may be over a path that allows `path` (shared/net/buffers/packet-room.ts): the path's MTU less
 * the transport overhead, and the room to grant so that the transport header, padding and tag and the
 * path's own framing are all written in place.
 */
export function transportRoom(path: PacketRoom): PacketRoom {
  return {
    mtu: path.mtu - TRANSPORT_OVERHEAD,
    headroom: path.headroom + TRANSPORT_HEADROOM,
    tailroom: path.tailroom + TRANSPORT_TAILROOM,
  };
}

/** wireguard-go calculatePaddingSize: the padded plaintext length for an inner packet of `len` bytes. */
export function paddedLength(len: number, mtu: number): number {
  let last = len;
  if (mtu === 0) return (last + PADDING_MULTIPLE - 1) & ~(PADDING_MULTIPLE - 1);
  if (last > mtu) last %= mtu;
  let padded = (last + PADDING_MULTIPLE - 1) & ~(PADDING_MULTIPLE - 1);
  if (padded > mtu) padded = mtu;
  return len - last + padded;
}

/**
 * Builds the transport datagram for `packet` (empty = keepalive) under `kp` and advances its send counter.
 * `nonce` is a 12-byte scratch buffer whose first 4 bytes are zero. When `packet` was granted room (see
 * the top of this file) it is encrypted in place and the result is a view around it.
 */
export function sealTransport(
  aead: Aead,
  kp: Keypair,
  packet: Uint8Array,
  mtu: number,
  nonce: Buffer,
): Buffer {
  const len = packet.length;
  const padded = paddedLength(len, mtu);
  const grown = growPacket(packet, DATA_HEADER_LEN, padded - len + AEAD_TAG_LEN);
  const out = grown ?? Buffer.allocUnsafe(DATA_HEADER_LEN + padded + AEAD_TAG_LEN);
  const counter = kp.sendCounter;
  writeTransportHeader(out, kp.remoteIndex, counter);
  nonce.writeUInt32LE(counter % 0x1_0000_0000, 4);
  nonce.writeUInt32LE(Math.floor(counter / 0x1_0000_0000), 8);
  const body = out.subarray(DATA_HEADER_LEN);
  if (!grown && padded === len) {
    aead.seal(body, kp.sendKey, nonce, packet); // no padding: seal straight from the caller's buffer
  } else {
    if (!grown) out.set(packet, DATA_HEADER_LEN);
    if (padded > len) out.fill(0, DATA_HEADER_LEN + len, DATA_HEADER_LEN + padded);
    aead.seal(body, kp.sendKey, nonce, body.subarray(0, padded)); // in place
  }
  kp.sendCounter = counter + 1;
  return out;
}

/**
 * Builds the transport datagrams for a run of packets to one peer under `kp`, in order, and advances its send
 * counter by their number; appends them to `out`. The same bytes as sealTransport() for each packet in turn.
 * Where the AEAD seals runs (`sealTransports`: the OpenSSL addon) the run takes one native call, which writes
 * the headers and seals every datagram in place; otherwise each packet is sealed by sealTransport().
 */
export function sealTransportRun(
  aead: Aead,
  kp: Keypair,
  packets: readonly Uint8Array[],
  mtu: number,
  nonce: Buffer,
  out: Buffer[],
): void {
  if (aead.sealTransports === undefined || packets.length === 1) {
    for (const packet of packets) out.push(sealTransport(aead, kp, packet, mtu, nonce));
    return;
  }
  const start = out.length;
  for (const packet of packets) out.push(framed(packet, mtu));
  const first = kp.sendCounter;
  aead.sealTransports(kp.sendKey, kp.remoteIndex, first, start === 0 ? out : out.slice(start));
  kp.sendCounter = first + packets.length;
}

/** A datagram around `packet` (in place when granted room, else a copy), padded, header and tag not written. */
function framed(packet: Uint8Array, mtu: number): Buffer {
  const len = packet.length;
  const padded = paddedLength(len, mtu);
  const grown = growPacket(packet, DATA_HEADER_LEN, padded - len + AEAD_TAG_LEN);
  const datagram = grown ?? Buffer.allocUnsafe(DATA_HEADER_LEN + padded + AEAD_TAG_LEN);
  if (!grown) datagram.set(packet, DATA_HEADER_LEN);
  if (padded > len) datagram.fill(0, DATA_HEADER_LEN + len, DATA_HEADER_LEN + padded);
  return datagram;
}

/**
 * Opens a transport datagram in place. Returns the plaintext as a view into `datagram`
 * (bytes 16..), or null when it does not authenticate. Does not touch the replay filter.
 */
export function openTransport(aead: Aead, kp: Keypair, datagram: Buffer, nonce: Buffer): Buffer | null {
  nonce.writeUInt32LE(datagram.readUInt32LE(DATA_COUNTER), 4);
  nonce.writeUInt32LE(datagram.readUInt32LE(DATA_COUNTER + 4), 8);
  const ct = datagram.subarray(DATA_HEADER_LEN);
  const n = aead.open(ct.subarray(0, ct.length - AEAD_TAG_LEN), kp.recvKey, nonce, ct);
  return n < 0 ? null : datagram.subarray(DATA_HEADER_LEN, DATA_HEADER_LEN + n);
}
