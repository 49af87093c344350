/**
 * The agent's WireGuard key pair: `wg genkey | wg pubkey` through shared/wg-cli when that module and
 * the binary are present, tweetnacl (shared/keys.ts) otherwise.
 */
import { type KeyPair, generateKeyPair as naclKeyPair } from '../../shared/keys.js';

/** Resolved at run time so the agent still builds and runs where the wg-cli wrapper is absent. */
const WG_CLI_MODULE: string = '../../shared/wg-cli/keys.js';

type WgCliKeys = { generateKeyPair?: () => Promise<KeyPair> };

export async function generateAgentKeyPair(): Promise<KeyPair> {
  let mod: WgCliKeys | undefined;
  try {
    mod = (await import(WG_CLI_MODULE)) as WgCliKeys;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && !String(err).includes('Cannot find module')) throw err;
  }
  if (mod?.generateKeyPair) return mod.generateKeyPair();
  return naclKeyPair();
}
