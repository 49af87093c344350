/** Test helper: a throw-away self-signed certificate made with the openssl CLI (tests only). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
