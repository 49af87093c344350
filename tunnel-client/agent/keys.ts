/**
 * The agent's WireGuard key pair: `wg genkey | wg pubkey` through shared/wg-cli when the binary is
 * installed, tweetnacl otherwise (the wrapper falls back by itself).
 */
import type { KeyPair } from '../../shared/keys.js';
import { generateKeyPair } from '../../shared/kit/wg-cli/keys.js';

export async function generateAgentKeyPair(): Promise<KeyPair & { source: 'wg' | 'tweetnacl' }> {
  return generateKeyPair();
}
