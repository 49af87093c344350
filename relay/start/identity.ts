/**
 * The relay's identity on disk, created on first start in an empty data dir:
 *   <dataDir>/tls/cert.pem, key.pem   self-signed ECDSA P-256 certificate (unless --tls-cert/--tls-key)
 *   <dataDir>/hub.key                 the hub node's WireGuard private key, base64, mode 0600 (unless
 *                                     --hub-key-file: the one key every replica of a fleet shares)
 * and, in the store, the first admin access key (only its hash; the key itself is returned once).
 * Private keys are created 0600 whatever the umask, and checked on every load (shared/kit/secret-file.ts:
 * a wider mode on a file of ours is set back to 0600 and reported; one that cannot be fixed is refused).
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { TunnelError } from '../../shared/errors.js';
import { type OnModeFixed, protectSecretFile, writeNewSecretFile } from '../../shared/kit/secret-file.js';
import type { Store } from '../control/store/types.js';
import type { RelayConfig } from '../ops/config/config.js';
import { readOrFail } from '../ops/hub-key.js';
import { caPinOf, createSelfSignedCert, keyMatchesCert, pemDecodeFirst } from '../ops/tls/self-signed.js';
import { mintAdminKey } from './admin-key.js';

export interface TlsIdentity {
  certPem: string;
  keyPem: string;
  certDer: Buffer;
  caPin: string;
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
