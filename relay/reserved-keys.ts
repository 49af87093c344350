/**
 * Public keys no agent may hold: the hub node's own (today one; with relay replicas, each replica's hub
 * key is added here once). Registration refuses them (agentPublicKey, KEY_RESERVED), the DERP server never
 * closes their connections (closeClient), and a stored cluster that already carries one is skipped when the
 * hub loads its peers. Public keys are not secret: they are named in errors and logs.
 */
import { TunnelError } from '../shared/errors.js';
import { KEY_LEN, keyToBase64, parsePublicKey } from '../shared/keys.js';

/** Reserved keys held at most (one per relay replica). */
export const MAX_RESERVED_KEYS = 1024;

export class ReservedKeys {
  /** Base64 of each key. */
  readonly #keys = new Set<string>();

  constructor(keys: Iterable<Uint8Array> = []) {
    for (const k of keys) this.add(k);
  }

  /** Reserves a 32-byte key; LIMIT_EXCEEDED past MAX_RESERVED_KEYS. */
  add(key: Uint8Array): void {
    const id = keyToBase64(key);
    if (this.#keys.has(id)) return;
    if (this.#keys.size >= MAX_RESERVED_KEYS) {
      throw new TunnelError('LIMIT_EXCEEDED', `reserved keys: at most ${MAX_RESERVED_KEYS}`);
    }
    this.#keys.add(id);
  }

  /** Whether `key` (base64, or 32 raw bytes) is reserved. Anything else is not. */
  has(key: string | Uint8Array): boolean {
    if (typeof key === 'string') return this.#keys.has(key);
    return key.length === KEY_LEN && this.#keys.has(Buffer.from(key).toString('base64'));
  }

  get size(): number {
    return this.#keys.size;
  }
}

/**
 * An agent's public key as registration takes it (base64 or hex): well formed (KEY_INVALID), a usable
 * Curve25519 point (KEY_UNUSABLE) and not reserved (KEY_RESERVED). Returns the canonical base64 form.
 */
export function agentPublicKey(text: string, reserved: ReservedKeys, what = 'publicKey'): string {
  const key = keyToBase64(parsePublicKey(text, what));
  if (reserved.has(key)) {
    throw new TunnelError(
      'KEY_RESERVED',
      `${what} ${key} is the relay's own hub key and cannot be registered by an agent; ` +
        'generate a key pair with `wg genkey`',
    );
  }
  return key;
}
