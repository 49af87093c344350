/**
 * mac1 / mac2 and cookie replies (reference §5).
 *
 * CookieChecker (one per device, keyed by OUR public key) verifies mac1 on every handshake message,
 * verifies mac2 when under load, and builds cookie replies. CookieGenerator (one per peer, keyed by
 * the PEER's public key) adds mac1/mac2 to what we send and consumes cookie replies addressed to us.
 */
import { randomBytes } from 'node:crypto';
import { TunnelError } from '../../errors.js';
import { LABEL_COOKIE, LABEL_MAC1 } from './constants.js';
import { hash, MAC_LEN, mac, XAEAD_NONCE_LEN, xaeadOpen, xaeadSeal } from './crypto/hash.js';
import { type CookieReply, MACS_TRAILER, writeCookieReply } from './messages.js';

const LABEL_MAC1_BYTES = Buffer.from(LABEL_MAC1);
const LABEL_COOKIE_BYTES = Buffer.from(LABEL_COOKIE);

function timingSafeEq(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let acc = 0;
  for (let i = 0; i < a.length; i++) acc |= a[i]! ^ b[i]!;
  return acc === 0;
}

export class CookieChecker {
  readonly #mac1Key: Buffer;
  readonly #cookieKey: Buffer;
  #secret = Buffer.alloc(32);
  #secretSetAt = Number.NEGATIVE_INFINITY;

  constructor(
    ownPublicKey: Uint8Array,
    private readonly refreshTime: number,
  ) {
    this.#mac1Key = hash(LABEL_MAC1_BYTES, ownPublicKey);
    this.#cookieKey = hash(LABEL_COOKIE_BYTES, ownPublicKey);
  }

  /** mac1 = MAC(HASH(LABEL_MAC1 || our pk), msg[0 : len-32]). */
  checkMac1(msg: Buffer): boolean {
    const n = msg.length - MACS_TRAILER;
    if (n < 0) return false;
    return timingSafeEq(mac(this.#mac1Key, msg.subarray(0, n)), msg.subarray(n, n + MAC_LEN));
  }

  /** mac2 = MAC(cookie, msg[0 : len-16]), cookie = MAC(secret, source); fails once the secret is stale. */
  checkMac2(msg: Buffer, source: Uint8Array, now: number): boolean {
    if (now - this.#secretSetAt > this.refreshTime) return false;
    const n = msg.length - MAC_LEN;
    if (n < MAC_LEN) return false;
    const cookie = mac(this.#secret, source);
    return timingSafeEq(mac(cookie, msg.subarray(0, n)), msg.subarray(n));
  }

  /** A 64-byte cookie reply to `msg` (an initiation or response) whose sender index is `senderIndex`. */
  createReply(msg: Buffer, senderIndex: number, source: Uint8Array, now: number): Buffer {
    if (now - this.#secretSetAt > this.refreshTime) {
      this.#secret = randomBytes(32);
      this.#secretSetAt = now;
    }
    const cookie = mac(this.#secret, source);
    const n = msg.length - MACS_TRAILER;
    const mac1 = msg.subarray(n, n + MAC_LEN);
    const nonce = randomBytes(XAEAD_NONCE_LEN);
    const reply: CookieReply = {
      receiverIndex: senderIndex,
      nonce,
      encryptedCookie: Buffer.from(xaeadSeal(this.#cookieKey, nonce, cookie, mac1)),
    };
    return writeCookieReply(reply);
  }
}

/**
 * The two keys (HASH(label || peer pk)) are derived when used instead of stored: a hub holds one generator
 * per agent and sends it a handshake message rarely (a response per initiation, every two minutes in steady
 * state), so one BLAKE2s of 40 bytes per message is cheaper than two 32-byte digests kept per peer (each
 * digest holds its own ArrayBuffer, ~0.45 KiB of RSS).
 */
export class CookieGenerator {
  /** The peer's public key (the caller's Buffer, kept by reference: never written). */
  readonly #peerPublicKey: Uint8Array;
  #cookie: Uint8Array | null = null;
  #cookieSetAt = Number.NEGATIVE_INFINITY;
  #lastMac1: Uint8Array | null = null;

  constructor(
    peerPublicKey: Uint8Array,
    private readonly refreshTime: number,
  ) {
    this.#peerPublicKey = peerPublicKey;
  }

  /** Fills mac1 and mac2 (zeros without a fresh cookie) into the last 32 bytes of `msg`. */
  addMacs(msg: Buffer, now: number): void {
    const n = msg.length - MACS_TRAILER;
    if (n < 0) throw new TunnelError('INTERNAL', 'handshake message too short for macs');
    const m1 = mac(hash(LABEL_MAC1_BYTES, this.#peerPublicKey), msg.subarray(0, n));
    msg.set(m1, n);
    this.#lastMac1 = m1;
    if (this.#cookie && now - this.#cookieSetAt <= this.refreshTime) {
      msg.set(mac(this.#cookie, msg.subarray(0, n + MAC_LEN)), n + MAC_LEN);
    } else {
      msg.fill(0, n + MAC_LEN, n + MACS_TRAILER);
    }
  }

  /** Decrypts a cookie reply with the last mac1 sent as AAD; false (ignored) when it does not open. */
  consumeReply(reply: CookieReply, now: number): boolean {
    if (!this.#lastMac1) return false;
    const cookieKey = hash(LABEL_COOKIE_BYTES, this.#peerPublicKey);
    const cookie = xaeadOpen(cookieKey, reply.nonce, reply.encryptedCookie, this.#lastMac1);
    if (!cookie) return false;
    this.#cookie = cookie;
    this.#cookieSetAt = now;
    return true;
  }

  get hasCookie(): boolean {
    return this.#cookie !== null;
  }
}
