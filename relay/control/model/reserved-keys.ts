/**
 * Public keys no agent may hold: the hub node's own (today one; with relay replicas, each replica's hub
 * key is added here once). Registration refuses them (agentPublicKey, KEY_RESERVED), the DERP server never
 * closes their connections (closeClient), and a stored cluster that already carries one is skipped when the
 * hub loads its peers. Public keys are not secret: they are named in errors and logs.
 */
import { TunnelError } from '../../../shared/errors.js';
import { KEY_LEN, keyToBase64, parsePublicKey } from '../../../shared/keys.js';

const HEX_KEY = /^\s*[0-9a-fA-F]{64}\s*$/;

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

  /**
   * Whether `key` is reserved: 32 raw bytes, or text in base64 or hex (a stored row may hold either).
   * Anything that is not 32 bytes is not.
   */
  has(key: string | Uint8Array): boolean {
    const bytes =
      typeof key !== 'string'
        ? key
        : HEX_KEY.test(key)
          ? Buffer.from(key, 'hex')
          : Buffer.from(key, 'base64');
    return bytes.length === KEY_LEN && this.#keys.has(Buffer.from(bytes).toString('base64'));
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
