/**
 * Noise_IKpsk2 as WireGuard uses it (reference §4), in the exact order of wireguard-go's
 * noise-protocol.go. No I/O: the device calls these with its static identity and the peer's state.
 * mac1/mac2 are added and checked by cookie.ts; lookups and timers live in device.ts / peer.ts.
 */
import { TunnelError } from '../../errors.js';
import { CONSTRUCTION, IDENTIFIER } from './constants.js';
import { AEAD_TAG_LEN, type Aead } from './crypto/aead.js';
import { hash, kdf1, kdf2, kdf3 } from './crypto/hash.js';
import type { PrivateKeyHandle, PublicKeyHandle, X25519 } from './crypto/x25519.js';
import {
  INIT_LEN,
  type Initiation,
  RESP_LEN,
  type Response,
  writeInitiation,
  writeResponse,
} from './messages.js';
import { compareTai64n, type TimestampGenerator, ZERO_TAI64N } from './tai64n.js';

export const C0: Buffer = hash(Buffer.from(CONSTRUCTION));
export const H0: Buffer = hash(C0, Buffer.from(IDENTIFIER));
const ZERO_NONCE = Buffer.alloc(12);
const EMPTY = Buffer.alloc(0);

export type HandshakeStateName =
  | 'zeroed'
  | 'initiation-created'
  | 'initiation-consumed'
  | 'response-created'
  | 'response-consumed';

/** Per-peer handshake state (wireguard-go `Handshake`). */
export class Handshake {
  state: HandshakeStateName = 'zeroed';
  hash: Buffer = H0;
  chainKey: Buffer = C0;
  localEphemeral: PrivateKeyHandle | null = null;
  remoteEphemeral: PublicKeyHandle | null = null;
  localIndex = 0;
  remoteIndex = 0;
  /** Newest TAI64N consumed from this peer (replay check). */
  lastTimestamp: Buffer = ZERO_TAI64N; // replaced, never written in place
  /** Monotonic ms of the last initiation consumed (flood check). */
  lastInitiationConsumed = Number.NEGATIVE_INFINITY;

  clear(): void {
    this.state = 'zeroed';
    this.hash = H0;
    this.chainKey = C0;
    this.localEphemeral = null;
    this.remoteEphemeral = null;
    this.localIndex = 0;
    this.remoteIndex = 0;
  }
}

export interface NoiseIdentity {
  readonly staticKey: PrivateKeyHandle;
  readonly aead: Aead;
  readonly x25519: X25519;
}

export interface NoisePeer {
  readonly remoteStatic: PublicKeyHandle;
  /** DH(our static, their static), precomputed once per peer. */
  readonly staticStatic: Buffer;
  readonly presharedKey: Buffer;
  readonly handshake: Handshake;
  readonly timestamps: TimestampGenerator;
}

function fail(msg: string): TunnelError {
  return new TunnelError('WG_HANDSHAKE_FAILED', msg);
}

function seal(aead: Aead, key: Uint8Array, plaintext: Uint8Array, ad: Uint8Array): Buffer {
  const out = Buffer.alloc(plaintext.length + AEAD_TAG_LEN);
  aead.seal(out, key, ZERO_NONCE, plaintext, ad);
  return out;
}

function open(aead: Aead, key: Uint8Array, ciphertext: Uint8Array, ad: Uint8Array, what: string): Buffer {
  const out = Buffer.alloc(ciphertext.length - AEAD_TAG_LEN);
  if (aead.open(out, key, ZERO_NONCE, ciphertext, ad) < 0) throw fail(`${what} did not authenticate`);
  return out;
}

/** Initiator, message 1 (without macs). `localIndex` is the fresh sender index. */
export function createInitiation(
  id: NoiseIdentity,
  peer: NoisePeer,
  localIndex: number,
  wallMs: number,
): Buffer {
  const hs = peer.handshake;
  const { aead, x25519 } = id;
  let h = hash(H0, peer.remoteStatic.raw);
  let c: Buffer = C0;
  const eph = x25519.generate();
  c = kdf1(c, eph.publicKey);
  h = hash(h, eph.publicKey);
  let k: Buffer;
  [c, k] = kdf2(c, x25519.dh(eph, peer.remoteStatic));
  const encryptedStatic = seal(aead, k, id.staticKey.publicKey, h);
  h = hash(h, encryptedStatic);
  [c, k] = kdf2(c, peer.staticStatic);
  const encryptedTimestamp = seal(aead, k, peer.timestamps.next(wallMs), h);
  h = hash(h, encryptedTimestamp);

  hs.state = 'initiation-created';
  hs.hash = h;
  hs.chainKey = c;
  hs.localEphemeral = eph;
  hs.remoteEphemeral = null;
  hs.localIndex = localIndex;
  return writeInitiation({
    senderIndex: localIndex,
    ephemeral: eph.publicKey,
    encryptedStatic,
    encryptedTimestamp,
  });
}

export interface ConsumedInitiation<P extends NoisePeer> {
  readonly peer: P;
}

/**
 * Responder, message 1. `lookup` maps the decrypted static key to a configured peer. Applies the
 * timestamp replay and the flood checks, then stores the state in the peer's handshake.
 */
export function consumeInitiation<P extends NoisePeer>(
  id: NoiseIdentity,
  msg: Initiation,
  lookup: (staticKey: Buffer) => P | undefined,
  nowMs: number,
  floodGapMs: number,
): P {
  const { aead, x25519 } = id;
  let h = hash(H0, id.staticKey.publicKey);
  let c: Buffer = C0;
  c = kdf1(c, msg.ephemeral);
  h = hash(h, msg.ephemeral);
  const remoteEphemeral = x25519.importPublic(msg.ephemeral);
  let k: Buffer;
  [c, k] = kdf2(c, x25519.dh(id.staticKey, remoteEphemeral));
  const staticKey = open(aead, k, msg.encryptedStatic, h, 'encrypted_static');
  h = hash(h, msg.encryptedStatic);
  const peer = lookup(staticKey);
  if (!peer)
    throw new TunnelError('WG_UNKNOWN_PEER', 'initiation from a static key that is not a configured peer');
  [c, k] = kdf2(c, peer.staticStatic);
  const timestamp = open(aead, k, msg.encryptedTimestamp, h, 'encrypted_timestamp');
  h = hash(h, msg.encryptedTimestamp);

  const hs = peer.handshake;
  if (compareTai64n(timestamp, hs.lastTimestamp) <= 0) {
    throw new TunnelError('WG_REPLAY', 'initiation timestamp is not newer than the last one from this peer');
  }
  if (nowMs - hs.lastInitiationConsumed <= floodGapMs) {
    throw fail(`initiation flood: less than ${floodGapMs} ms since the previous one from this peer`);
  }
  hs.hash = h;
  hs.chainKey = c;
  hs.remoteIndex = msg.senderIndex;
  hs.remoteEphemeral = remoteEphemeral;
  hs.lastTimestamp = timestamp;
  hs.lastInitiationConsumed = nowMs;
  hs.state = 'initiation-consumed';
  return peer;
}

/** Responder, message 2 (without macs). */
export function createResponse(id: NoiseIdentity, peer: NoisePeer, localIndex: number): Buffer {
  const hs = peer.handshake;
  if (hs.state !== 'initiation-consumed' || !hs.remoteEphemeral) {
    throw fail('response requested without a consumed initiation');
  }
  const { aead, x25519 } = id;
  const eph = x25519.generate();
  let h = hash(hs.hash, eph.publicKey);
  let c = kdf1(hs.chainKey, eph.publicKey);
  c = kdf1(c, x25519.dh(eph, hs.remoteEphemeral));
  c = kdf1(c, x25519.dh(eph, peer.remoteStatic));
  const [c3, tau, k] = kdf3(c, peer.presharedKey);
  c = c3;
  h = hash(h, tau);
  const encryptedNothing = seal(aead, k, EMPTY, h);
  h = hash(h, encryptedNothing);

  hs.hash = h;
  hs.chainKey = c;
  hs.localEphemeral = eph;
  hs.localIndex = localIndex;
  hs.state = 'response-created';
  return writeResponse({
    senderIndex: localIndex,
    receiverIndex: hs.remoteIndex,
    ephemeral: eph.publicKey,
    encryptedNothing,
  });
}

/** Initiator, message 2. The caller found `peer` through the receiver index. */
export function consumeResponse(id: NoiseIdentity, msg: Response, peer: NoisePeer): void {
  const hs = peer.handshake;
  if (hs.state !== 'initiation-created' || !hs.localEphemeral || hs.localIndex !== msg.receiverIndex) {
    throw fail('response does not match an outstanding initiation');
  }
  const { aead, x25519 } = id;
  const remoteEphemeral = x25519.importPublic(msg.ephemeral);
  let h = hash(hs.hash, msg.ephemeral);
  let c = kdf1(hs.chainKey, msg.ephemeral);
  c = kdf1(c, x25519.dh(hs.localEphemeral, remoteEphemeral));
  c = kdf1(c, x25519.dh(id.staticKey, remoteEphemeral));
  const [c3, tau, k] = kdf3(c, peer.presharedKey);
  c = c3;
  h = hash(h, tau);
  open(aead, k, msg.encryptedNothing, h, 'encrypted_nothing');
  h = hash(h, msg.encryptedNothing);

  hs.hash = h;
  hs.chainKey = c;
  hs.remoteIndex = msg.senderIndex;
  hs.remoteEphemeral = remoteEphemeral;
  hs.state = 'response-consumed';
}

export interface SessionKeys {
  readonly sendKey: Buffer;
  readonly recvKey: Buffer;
  readonly localIndex: number;
  readonly remoteIndex: number;
  readonly isInitiator: boolean;
}

/** (T1, T2) = KDF2(C, empty); the initiator sends with T1, the responder with T2. Clears the handshake. */
export function deriveSession(hs: Handshake): SessionKeys {
  let isInitiator: boolean;
  if (hs.state === 'response-consumed') isInitiator = true;
  else if (hs.state === 'response-created') isInitiator = false;
  else throw fail(`cannot derive a session from handshake state ${hs.state}`);
  const [t1, t2] = kdf2(hs.chainKey, EMPTY);
  const keys: SessionKeys = {
    sendKey: isInitiator ? t1 : t2,
    recvKey: isInitiator ? t2 : t1,
    localIndex: hs.localIndex,
    remoteIndex: hs.remoteIndex,
    isInitiator,
  };
  hs.clear();
  return keys;
}

export const HANDSHAKE_SIZES = { initiation: INIT_LEN, response: RESP_LEN } as const;
