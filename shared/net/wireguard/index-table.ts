/**
 * The device-wide table of random 32-bit local indices (reference §8). An index first names a
 * handshake and, once the session is derived, the keypair (wireguard-go SwapIndexForKeypair).
 * Capped: allocation fails with LIMIT_EXCEEDED when full.
 */
import { randomBytes } from 'node:crypto';
import { TunnelError } from '../../errors.js';
import type { Keypair } from './keypair.js';

export interface IndexEntry<P> {
  readonly peer: P;
  keypair: Keypair | null;
}

export class IndexTable<P> {
  readonly #map = new Map<number, IndexEntry<P>>();
  constructor(readonly cap: number) {}

  get size(): number {
    return this.#map.size;
  }

  /** A fresh random index for a handshake of `peer`. */
  allocate(peer: P): number {
    if (this.#map.size >= this.cap) {
      throw new TunnelError('LIMIT_EXCEEDED', `WireGuard index table is full (${this.cap} entries)`);
    }
    for (;;) {
      const idx = randomBytes(4).readUInt32LE(0);
      if (!this.#map.has(idx)) {
        this.#map.set(idx, { peer, keypair: null });
        return idx;
      }
    }
  }

  get(index: number): IndexEntry<P> | undefined {
    return this.#map.get(index);
  }

  setKeypair(index: number, kp: Keypair): void {
    const e = this.#map.get(index);
    if (e) e.keypair = kp;
  }

  delete(index: number): void {
    this.#map.delete(index);
  }

  deletePeer(peer: P): void {
    for (const [k, e] of this.#map) if (e.peer === peer) this.#map.delete(k);
  }
}
