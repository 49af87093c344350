/**
 * The relay's identity on disk, created on first start in an empty data dir:
 *   <dataDir>/tls/cert.pem, key.pem   self-signed ECDSA P-256 certificate (unless --tls-cert/--tls-key)
 *   <dataDir>/hub.key                 the hub node's WireGuard private key, base64, mode 0600 (unless
 *                                     --hub-key-file: the one key every replica of a fleet shares)
 * and, in the store, the first admin access key (only its hash; the key itself is returned once).
 * Private keys are created 0600 whatever the umask, and checked on every load (shared/secret-file.ts:
 * a wider mode on a file of ours is set back to 0600 and reported; one that cannot be fixed is refused).
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { TunnelError } from '../shared/errors.js';
import {
  generateKeyPair,
  type KeyPair,
  keyToBase64,
  parseKey,
  publicKeyFromPrivate,
} from '../shared/keys.js';
import { type OnModeFixed, protectSecretFile, writeNewSecretFile } from '../shared/secret-file.js';
import { mintAdminKey } from './admin-key.js';
import type { RelayConfig } from './config.js';
import type { Store } from './store/types.js';
import { caPinOf, createSelfSignedCert, keyMatchesCert, pemDecodeFirst } from './tls/self-signed.js';

export interface TlsIdentity {
  certPem: string;
  keyPem: string;
  certDer: Buffer;
  caPin: string;
}

function readOrFail(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new TunnelError(
      'BAD_CONFIG',
      `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
}

export function ensureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** Host names and addresses the self-signed certificate covers. */
export function certAltNames(config: RelayConfig): string[] {
  const names = ['localhost', '127.0.0.1', '::1'];
  if (config.publicUrl) names.push(new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, ''));
  const h = config.listen.host;
  if (h !== '0.0.0.0' && h !== '::' && (isIP(h) || /^[a-z0-9.-]+$/i.test(h))) names.push(h);
  return [...new Set(names)];
}

export function loadOrCreateTls(
  config: RelayConfig,
  nowWall: number,
  onModeFixed?: OnModeFixed,
): TlsIdentity {
  let certPem: string;
  let keyPem: string;
  if (config.tlsCert && config.tlsKey) {
    certPem = readOrFail(config.tlsCert, 'tls-cert');
    protectSecretFile(config.tlsKey, 'tls-key', onModeFixed);
    keyPem = readOrFail(config.tlsKey, 'tls-key');
  } else {
    const dir = join(config.dataDir, 'tls');
    const certPath = join(dir, 'cert.pem');
    const keyPath = join(dir, 'key.pem');
    if (!existsSync(certPath)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const c = createSelfSignedCert({
        commonName: 'tunnel-relay',
        altNames: certAltNames(config),
        now: nowWall,
      });
      writeNewSecretFile(keyPath, c.keyPem);
      writeFileSync(certPath, c.certPem, { mode: 0o644 });
    }
    protectSecretFile(keyPath, 'TLS private key', onModeFixed);
    certPem = readFileSync(certPath, 'utf8');
    keyPem = readFileSync(keyPath, 'utf8');
  }
  let certDer: Buffer;
  try {
    certDer = pemDecodeFirst(certPem);
  } catch {
    throw new TunnelError('BAD_CONFIG', 'tls-cert: the file holds no PEM CERTIFICATE block');
  }
  let matches = false;
  try {
    matches = keyMatchesCert(keyPem, certDer);
  } catch {
    throw new TunnelError('BAD_CONFIG', 'tls-key: the file holds no readable PEM private key');
  }
  if (!matches) throw new TunnelError('BAD_CONFIG', 'tls-key: the private key does not belong to tls-cert');
  return { certPem, keyPem, certDer, caPin: caPinOf(certDer) };
}

/** The CA advertised to agents and kubeconfigs when TLS is terminated in front of the relay. */
export interface PublicCa {
  /** Every certificate in the file, PEM (certificate-authority-data of kubeconfigs). */
  pem: string;
  /** `sha256:<hex>` of the first certificate's DER (the join command's --ca-pin). */
  pin: string;
  /** The first certificate, DER. */
  firstDer: Buffer;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Reads --public-ca-file: one or more PEM certificates; BAD_CONFIG naming the file when unusable. */
export function loadPublicCa(path: string): PublicCa {
  const text = readOrFail(path, 'public-ca-file');
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) {
    throw new TunnelError('BAD_CONFIG', `public-ca-file: ${path} holds no PEM CERTIFICATE block`);
  }
  let firstDer: Buffer | null = null;
  for (const block of blocks) {
    try {
      const x = new X509Certificate(block);
      firstDer ??= Buffer.from(x.raw);
    } catch {
      throw new TunnelError('BAD_CONFIG', `public-ca-file: ${path} holds a certificate that does not parse`);
    }
  }
  return { pem: `${blocks.join('\n')}\n`, pin: caPinOf(firstDer!), firstDer: firstDer! };
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

/**
 * Issues the first admin access key if this store has never issued one. Returns the key (to print
 * once) or null on every later start.
 */
export async function ensureAdminKey(store: Store, nowWall: number): Promise<string | null> {
  if ((await store.getMeta('initial-admin-key')) !== null) return null;
  // Key first, marker second: a crash in between yields a second admin key on the next start
  // rather than none.
  const { id, token } = await mintAdminKey(store, {
    now: nowWall,
    description: 'initial admin key (first start)',
    actor: 'system',
    detail: {},
  });
  await store.initMeta('initial-admin-key', id);
  return token;
}
