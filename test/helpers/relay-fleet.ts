/**
 * What the replicas of a relay fleet share, for tests that start several `tunnel-relay serve` on one PostgreSQL:
 * one hub WireGuard key (--hub-key-file), one TLS certificate and key for 127.0.0.1 and localhost (--tls-cert,
 * --tls-key) and one mesh key (--mesh-key-file), each written 0600 into a fresh directory. `serveArgs` gives the
 * flags of one replica; add --mesh-url only when the replica does not listen on the address others dial.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSelfSignedCert, pemDecodeFirst } from '../../relay/ops/tls/self-signed.js';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { pinOfCertificate } from '../../shared/tls-pin.js';

export interface FleetFiles {
  hubKeyFile: string;
  hubPublicKey: string;
  tlsCert: string;
  tlsKey: string;
  meshKeyFile: string;
  /** The certificate (PEM) clients trust, and its pin. */
  caPem: string;
  caPin: string;
}

function secret(path: string, text: string): string {
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

/** Writes a fleet's shared files into `dir` (the certificate also names `extraAltNames`). */
export function writeFleetFiles(dir: string, extraAltNames: readonly string[] = []): FleetFiles {
  const hub = generateKeyPair();
  const cert = createSelfSignedCert({
    commonName: 'tunnel-relay',
    altNames: ['localhost', '127.0.0.1', '::1', ...extraAltNames],
    now: Date.now(),
  });
  const tlsCert = join(dir, 'fleet-cert.pem');
  writeFileSync(tlsCert, cert.certPem, { mode: 0o644 });
  return {
    hubKeyFile: secret(join(dir, 'fleet-hub.key'), `${keyToBase64(hub.privateKey)}\n`),
    hubPublicKey: keyToBase64(hub.publicKey),
    tlsCert,
    tlsKey: secret(join(dir, 'fleet-key.pem'), cert.keyPem),
    meshKeyFile: secret(join(dir, 'fleet-mesh.key'), `${randomBytes(48).toString('base64')}\n`),
    caPem: cert.certPem,
    caPin: pinOfCertificate(pemDecodeFirst(cert.certPem)),
  };
}

/** The serve flags of one replica: the shared store and the fleet's files (mesh on). */
export function fleetServeArgs(
  f: FleetFiles,
  store: { url: string; passwordFile: string },
  opts: { mesh?: boolean } = {},
): string[] {
  return [
    '--store',
    store.url,
    '--store-password-file',
    store.passwordFile,
    '--hub-key-file',
    f.hubKeyFile,
    '--tls-cert',
    f.tlsCert,
    '--tls-key',
    f.tlsKey,
    ...(opts.mesh === false ? [] : ['--mesh-key-file', f.meshKeyFile]),
  ];
}
