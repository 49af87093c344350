/**
 * Key generation through `wg genkey` / `wg pubkey` / `wg genpsk`, with a tweetnacl fallback when
 * the binary is missing. All keys cross this module as 32-byte Buffers; `wg` speaks base64.
 */
import { isTunnelError } from '../../errors.js';
import {
  type KeyPair,
  keyToBase64,
  generateKeyPair as naclKeyPair,
  generatePresharedKey as naclPsk,
  parseKey,
} from '../../keys.js';
import { runWg, type WgCliOptions } from './run.js';

export async function wgGenkey(opts: WgCliOptions = {}): Promise<Buffer> {
  const { stdout } = await runWg(['genkey'], opts);
  return parseKey(stdout, 'wg genkey output');
}

export async function wgGenpsk(opts: WgCliOptions = {}): Promise<Buffer> {
  const { stdout } = await runWg(['genpsk'], opts);
  return parseKey(stdout, 'wg genpsk output');
}

/** The public key of `privateKey` as computed by `wg pubkey` (key passed on stdin, never in argv). */
export async function wgPubkey(privateKey: Uint8Array, opts: WgCliOptions = {}): Promise<Buffer> {
  const b64 = keyToBase64(privateKey);
  const { stdout } = await runWg(['pubkey'], opts, { input: `${b64}\n`, secrets: [b64] });
  return parseKey(stdout, 'wg pubkey output');
}

export interface GeneratedKeyPair extends KeyPair {
  /** Which implementation produced it. */
  readonly source: 'wg' | 'tweetnacl';
}

/** `wg genkey | wg pubkey` when `wg` is installed; tweetnacl (shared/keys.ts) otherwise. */
export async function generateKeyPair(opts: WgCliOptions = {}): Promise<GeneratedKeyPair> {
  try {
    const privateKey = await wgGenkey(opts);
    return { privateKey, publicKey: await wgPubkey(privateKey, opts), source: 'wg' };
  } catch (e) {
    if (!isTunnelError(e, 'WG_CLI_MISSING')) throw e;
    return { ...naclKeyPair(), source: 'tweetnacl' };
  }
}

/** `wg genpsk` when installed; 32 random bytes from tweetnacl otherwise. */
export async function generatePresharedKey(opts: WgCliOptions = {}): Promise<Buffer> {
  try {
    return await wgGenpsk(opts);
  } catch (e) {
    if (!isTunnelError(e, 'WG_CLI_MISSING')) throw e;
    return naclPsk();
  }
}
