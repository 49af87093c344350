/**
 * The hub node's WireGuard key pair on disk: `--hub-key-file` (the one key every replica of a fleet shares; never
 * created) or `<dataDir>/hub.key` (base64, created 0600 on first start). Checked 0600 on every load
 * (shared/kit/secret-file.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TunnelError } from '../../shared/errors.js';
import {
  generateKeyPair,
  type KeyPair,
  keyToBase64,
  parseKey,
  publicKeyFromPrivate,
} from '../../shared/keys.js';
import { type OnModeFixed, protectSecretFile, writeNewSecretFile } from '../../shared/kit/secret-file.js';
import type { RelayConfig } from './config/config.js';

/** The text of a file a flag names; BAD_CONFIG naming the flag and the path when it cannot be read. */
export function readOrFail(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new TunnelError(
      'BAD_CONFIG',
      `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
}

export function loadOrCreateHubKey(dataDir: string, onModeFixed?: OnModeFixed): KeyPair {
  const path = join(dataDir, 'hub.key');
  if (!existsSync(path)) {
    const kp = generateKeyPair();
    writeNewSecretFile(path, `${keyToBase64(kp.privateKey)}\n`);
    return kp;
  }
  protectSecretFile(path, 'hub private key', onModeFixed);
  const privateKey = parseKey(readFileSync(path, 'utf8'), `hub private key (${path})`);
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) };
}

/** The hub's key pair: --hub-key-file when given (never created), else <dataDir>/hub.key (created on first start). */
export function loadHubKey(config: RelayConfig, onModeFixed?: OnModeFixed): KeyPair {
  // A relay-mode replica never reads or creates one (config-mode.ts refuses --hub-key-file there).
  if (config.mode === 'relay') throw new TunnelError('INTERNAL', 'a relay-mode replica holds no hub key');
  if (config.hubKeyFile === null) return loadOrCreateHubKey(config.dataDir, onModeFixed);
  const path = config.hubKeyFile;
  protectSecretFile(path, 'hub private key', onModeFixed);
  const text = readOrFail(path, 'hub-key-file');
  let privateKey: Buffer;
  try {
    privateKey = parseKey(text, 'hub-key-file');
  } catch {
    throw new TunnelError(
      'BAD_CONFIG',
      `hub-key-file: ${path} does not hold a WireGuard private key (32 bytes, base64 or hex, on one line)`,
    );
  }
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) };
}
