/** The crypto seam of the WireGuard engine: one object holding the chosen implementations. */
import { type Aead, defaultAead } from './aead.js';
import { defaultX25519, type X25519 } from './x25519.js';

export * from './aead.js';
export * from './hash.js';
export * from './x25519.js';

export interface CryptoSuite {
  readonly aead: Aead;
  readonly x25519: X25519;
}

export function defaultCrypto(): CryptoSuite {
  return { aead: defaultAead(), x25519: defaultX25519() };
}
