/**
 * The box keys one node shares with its peers for disco messages: boxSharedKey(peer public, own private),
 * derived on first use and cached (an X25519 per peer, not per message). The cache holds at most
 * `maxPeers` keys and forgets the least recently used one past that; a key that is not a usable
 * Curve25519 point (keys.ts publicKeyProblem) gets no box key, so its messages drop as unknown-sender.
 */
import { KEY_LEN, keyToBase64, publicKeyFromPrivate, publicKeyProblem } from '../../keys.js';
import { boxSharedKey } from './disco-box.js';

export const DEFAULT_KEYRING_MAX_PEERS = 10_000;

export interface DiscoKeyringOptions {
  /** This node's WireGuard private key. */
  readonly privateKey: Uint8Array;
  readonly maxPeers?: number;
}

export class DiscoKeyring {
  readonly publicKey: Buffer;
  readonly #privateKey: Uint8Array;
  readonly #maxPeers: number;
  readonly #keys = new Map<string, Buffer>();

  constructor(o: DiscoKeyringOptions) {
    this.#privateKey = o.privateKey;
    this.publicKey = publicKeyFromPrivate(o.privateKey);
    this.#maxPeers = o.maxPeers ?? DEFAULT_KEYRING_MAX_PEERS;
  }

  get size(): number {
    return this.#keys.size;
  }

  /** The box key for `peer`, or null when it is not a usable public key (or is this node's own). */
  keyFor(peer: Uint8Array): Buffer | null {
    if (peer.length !== KEY_LEN) return null;
    const id = keyToBase64(peer);
    const cached = this.#keys.get(id);
    if (cached) {
      this.#keys.delete(id);
      this.#keys.set(id, cached);
      return cached;
    }
    if (publicKeyProblem(peer) !== null || this.publicKey.equals(peer)) return null;
    const key = boxSharedKey(peer, this.#privateKey);
    this.#keys.set(id, key);
    if (this.#keys.size > this.#maxPeers) {
      const oldest = this.#keys.keys().next().value;
      if (oldest !== undefined) this.#keys.delete(oldest);
    }
    return key;
  }
}
