/** Test helper: a throw-away self-signed certificate made with the openssl CLI (tests only). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCert {
  readonly key: string;
  readonly cert: string;
  /** DER bytes of the certificate. */
  readonly der: Buffer;
}

export function makeSelfSignedCert(cn = 'localhost'): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'tcert-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '2',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const pem = readFileSync(cert, 'utf8');
    const b64 = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
    return { key: readFileSync(key, 'utf8'), cert: pem, der: Buffer.from(b64, 'base64') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A server certificate signed by its own throw-away CA (what a cluster's API server has). */
export interface CaSignedCert {
  readonly caCert: string;
  readonly key: string;
  readonly cert: string;
}

/** A CA and a server certificate it signed for `sans` (openssl subjectAltName syntax: `DNS:x,IP:1.2.3.4`). */
export function makeCaSignedCert(sans: string): CaSignedCert {
  const dir = mkdtempSync(join(tmpdir(), 'tca-'));
  const f = (name: string) => join(dir, name);
  const ssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    ssl([
      'req',
      '-x509',
      ...ec,
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=test-ca',
    ]);
    ssl(['req', ...ec, '-keyout', f('key.pem'), '-out', f('req.csr'), '-subj', '/CN=kube-apiserver']);
    // openssl x509 -req takes the extensions from a file; -copy_extensions needs OpenSSL 3.
    writeFileSync(f('ext.cnf'), `subjectAltName=${sans}\n`);
    ssl([
      'x509',
      '-req',
      '-in',
      f('req.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f('cert.pem'),
      '-days',
      '2',
      '-extfile',
      f('ext.cnf'),
    ]);
    return {
      caCert: readFileSync(f('ca.crt'), 'utf8'),
      key: readFileSync(f('key.pem'), 'utf8'),
      cert: readFileSync(f('cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
