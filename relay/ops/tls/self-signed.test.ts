import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { caPinOf, createSelfSignedCert, keyMatchesCert } from './self-signed.js';

const dir = mkdtempSync(join(tmpdir(), 'relay-tls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('self-signed certificate', () => {
  const now = Date.UTC(2026, 10, 21, 12, 0, 0);
  const cert = createSelfSignedCert({
    commonName: 'tunnel-relay',
    altNames: ['localhost', '127.0.0.1', '::1', 'relay.example.com'],
    now: Date.now(),
  });

  it('parses with node X509Certificate, with the SANs and a valid signature', () => {
    const x = new X509Certificate(cert.certDer);
    expect(x.subjectAltName).toContain('DNS:localhost');
    expect(x.subjectAltName).toContain('DNS:relay.example.com');
    expect(x.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(x.subjectAltName).toContain('IP Address:0:0:0:0:0:0:0:1');
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.checkHost('relay.example.com')).toBe('relay.example.com');
    expect(x.checkHost('other.example.com')).toBeUndefined();
    expect(keyMatchesCert(cert.keyPem, cert.certDer)).toBe(true);
    expect(caPinOf(cert.certDer)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('is accepted by `openssl x509 -noout -text`', () => {
    const path = join(dir, 'cert.pem');
    writeFileSync(path, cert.certPem);
    const text = execFileSync('openssl', ['x509', '-noout', '-text', '-in', path], { encoding: 'utf8' });
    expect(text).toContain('Version: 3 (0x2)');
    expect(text).toContain('ecdsa-with-SHA256');
    expect(text).toContain('DNS:localhost');
    expect(text).toContain('IP Address:127.0.0.1');
    expect(text).toContain('CA:TRUE');
    expect(text).toContain('TLS Web Server Authentication');
    const verify = execFileSync('openssl', ['verify', '-CAfile', path, path], { encoding: 'utf8' });
    expect(verify.trim()).toBe(`${path}: OK`);
  });

  it('validity window brackets the given time (UTCTime and GeneralizedTime)', () => {
    const c1 = new X509Certificate(createSelfSignedCert({ commonName: 'a', altNames: ['a'], now }).certDer);
    expect(new Date(c1.validFrom).getTime()).toBe(now - 3_600_000);
    const far = Date.UTC(2049, 5, 1);
    const c2 = new X509Certificate(
      createSelfSignedCert({ commonName: 'b', altNames: ['b'], now: far, validDays: 3650 }).certDer,
    );
    expect(new Date(c2.validTo).getTime()).toBe(far + 3650 * 86_400_000);
  });

  it('completes a real TLS handshake verified against the certificate as the only CA', async () => {
    const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (_req, res) => res.end('hi'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const peerDer = await new Promise<Buffer>((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port, ca: cert.certPem, servername: 'localhost' }, () => {
          const raw = s.getPeerCertificate().raw;
          s.end();
          resolve(raw);
        });
        s.on('error', reject);
      });
      expect(peerDer.equals(cert.certDer)).toBe(true);
      const wrongHost = await new Promise<string>((resolve) => {
        const s = connect({ host: '127.0.0.1', port, ca: cert.certPem, servername: 'nope.example' }, () => {
          s.end();
          resolve('connected');
        });
        s.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? 'error'));
      });
      expect(wrongHost).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      server.close();
    }
  });
});
