/**
 * The DERP handshake bodies, sealed with NaCl crypto_box (X25519 + XSalsa20-Poly1305, tweetnacl):
 *
 *   ClientInfo body: clientPub[32] | nonce[24] | box(JSON)   sealed client private key -> server public key
 *   ServerInfo body: nonce[24] | box(JSON)                    sealed server private key -> client public key
 *
 * `box` is tag[16] | ciphertext, as Go's nacl/box and tweetnacl produce. Opening ClientInfo proves that the
 * client holds the private key of the WireGuard public key it claims. ClientInfo JSON is
 * `{"version":2,"CanAckPings":true,"challenge":"<32 hex>"}`: `challenge` echoes the 16 random bytes of this
 * connection's ServerKey frame, so a recorded ClientInfo cannot be replayed on another connection (a server
 * may accept clients without it; see relay/derp). Field names are matched case-insensitively, as Go does.
 * Both sides derive one shared key per connection (crypto_box_beforenm: HSalsa20 of the X25519 result), with
 * node:crypto's X25519 (~15x faster than tweetnacl's, which matters in connect storms) and tweetnacl's HSalsa20;
 * the boxes themselves are tweetnacl's. handshake.test.ts checks the key equals nacl.box.before.
 */
import { createPrivateKey, createPublicKey, diffieHellman, type KeyObject } from 'node:crypto';
import nacl from 'tweetnacl';
import { TunnelError } from '../../errors.js';
import { KEY_LEN } from '../../keys.js';
import { allocFrame, FRAME_HEADER_LEN, FrameType, NONCE_LEN, PROTOCOL_VERSION } from './frames.js';

const BOX_OVERHEAD = nacl.box.overheadLength; // 16
/** ClientInfo/ServerInfo JSON larger than this is refused before opening the box. */
export const MAX_INFO_JSON = 16 * 1024;

export interface ClientInfo {
  readonly version: number;
  /** Hex of the ServerKey challenge, when the server sent one. */
  readonly challenge?: string;
  readonly canAckPings?: boolean;
}

export interface ServerInfo {
  readonly version: number;
}

const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519 = Buffer.from('302a300506032b656e032100', 'hex');
const SIGMA = Buffer.from('expand 32-byte k', 'latin1');
const ZERO16 = new Uint8Array(16);
const privCache = new WeakMap<Uint8Array, KeyObject>();
/**
 * tweetnacl's published types leave out `lowlevel`, which nacl-fast.js exports: the one place it is typed. The
 * type only adds that member to tweetnacl's own, so every other use of `nacl` stays checked.
 */
type NaclWithLowlevel = typeof nacl & {
  readonly lowlevel: {
    crypto_core_hsalsa20(out: Uint8Array, inp: Uint8Array, k: Uint8Array, c: Uint8Array): number;
  };
};
const hsalsa20 = (nacl as NaclWithLowlevel).lowlevel.crypto_core_hsalsa20;

function privateKeyObject(raw: Uint8Array): KeyObject {
  let k = privCache.get(raw);
  if (!k) {
    k = createPrivateKey({ key: Buffer.concat([PKCS8_X25519, raw]), format: 'der', type: 'pkcs8' });
    privCache.set(raw, k);
  }
  return k;
}

/** crypto_box_beforenm(theirPublic, myPrivate). Throws DERP_AUTH_FAILED for a low-order public key. */
export function sharedKey(theirPublic: Uint8Array, myPrivate: Uint8Array): Uint8Array {
  if (theirPublic.length !== KEY_LEN || myPrivate.length !== KEY_LEN) {
    throw new TunnelError('KEY_INVALID', 'X25519 keys must be 32 bytes');
  }
  let s: Buffer;
  try {
    const pub = createPublicKey({
      key: Buffer.concat([SPKI_X25519, theirPublic]),
      format: 'der',
      type: 'spki',
    });
    s = diffieHellman({ privateKey: privateKeyObject(myPrivate), publicKey: pub });
  } catch {
    throw new TunnelError('DERP_AUTH_FAILED', 'public key is not usable for X25519 (low order)');
  }
  const k = new Uint8Array(32);
  hsalsa20(k, ZERO16, s, SIGMA);
  return k;
}

function seal(type: number, prefix: Uint8Array | null, key: Uint8Array, json: unknown): Buffer {
  const msg = Buffer.from(JSON.stringify(json), 'utf8');
  const nonce = nacl.randomBytes(NONCE_LEN);
  const box = nacl.box.after(msg, nonce, key);
  const pre = prefix ? prefix.length : 0;
  const f = allocFrame(type, pre + NONCE_LEN + box.length);
  if (prefix) f.set(prefix, FRAME_HEADER_LEN);
  f.set(nonce, FRAME_HEADER_LEN + pre);
  f.set(box, FRAME_HEADER_LEN + pre + NONCE_LEN);
  return f;
}

function open(sealed: Buffer, key: Uint8Array, what: string): Record<string, unknown> {
  if (sealed.length < NONCE_LEN + BOX_OVERHEAD) {
    throw new TunnelError('DERP_PROTOCOL', `${what} is ${sealed.length} bytes, too short for a sealed box`);
  }
  if (sealed.length > NONCE_LEN + BOX_OVERHEAD + MAX_INFO_JSON) {
    throw new TunnelError(
      'DERP_PROTOCOL',
      `${what} is ${sealed.length} bytes, limit ${MAX_INFO_JSON} of JSON`,
    );
  }
  const plain = nacl.box.open.after(sealed.subarray(NONCE_LEN), sealed.subarray(0, NONCE_LEN), key);
  if (!plain) throw new TunnelError('DERP_AUTH_FAILED', `${what} does not open with the expected keys`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength).toString('utf8'));
  } catch {
    throw new TunnelError('DERP_PROTOCOL', `${what} is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TunnelError('DERP_PROTOCOL', `${what} is not a JSON object`);
  }
  const lower: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(parsed)) lower[k.toLowerCase()] = v;
  return lower;
}

function version(obj: Record<string, unknown>, what: string): number {
  const v = obj.version ?? 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new TunnelError('DERP_PROTOCOL', `${what} version is not a non-negative integer`);
  }
  return v;
}

/** The whole ClientInfo frame. `key` = sharedKey(serverPub, clientPriv). */
export function encodeClientInfo(clientPub: Uint8Array, key: Uint8Array, challenge: Uint8Array): Buffer {
  const info: Record<string, unknown> = { version: PROTOCOL_VERSION, CanAckPings: true };
  if (challenge.length > 0) info.challenge = Buffer.from(challenge).toString('hex');
  return seal(FrameType.ClientInfo, clientPub, key, info);
}

export interface OpenedClientInfo {
  readonly clientKey: Buffer;
  readonly info: ClientInfo;
  /** The connection's shared box key, for sealing ServerInfo. */
  readonly key: Uint8Array;
}

/** Opens a ClientInfo body with the server's private key. Throws DERP_AUTH_FAILED if the box does not open. */
export function decodeClientInfo(body: Buffer, serverPrivate: Uint8Array): OpenedClientInfo {
  if (body.length < KEY_LEN) throw new TunnelError('DERP_PROTOCOL', `client info is ${body.length} bytes`);
  const clientKey = Buffer.from(body.subarray(0, KEY_LEN));
  const key = sharedKey(clientKey, serverPrivate);
  const obj = open(body.subarray(KEY_LEN), key, 'client info');
  const info: { version: number; challenge?: string; canAckPings?: boolean } = {
    version: version(obj, 'client info'),
  };
  if (typeof obj.challenge === 'string') info.challenge = obj.challenge;
  if (typeof obj.canackpings === 'boolean') info.canAckPings = obj.canackpings;
  return { clientKey, info, key };
}

/** The whole ServerInfo frame. */
export function encodeServerInfo(key: Uint8Array): Buffer {
  return seal(FrameType.ServerInfo, null, key, { version: PROTOCOL_VERSION });
}

export function decodeServerInfo(body: Buffer, key: Uint8Array): ServerInfo {
  const obj = open(body, key, 'server info');
  return { version: version(obj, 'server info') };
}
