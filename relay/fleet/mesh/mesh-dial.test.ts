/**
 * dialReplica against a real TLS server: the first dial checks the pin; the next dial to the same URL resumes the
 * pinned session (no certificate sent, no full handshake); a wrong pin is refused MESH_UNREACHABLE naming it, and
 * a session kept under the right pin is never offered for another pin. Every dial shares one OpenSSL context.
 */
import type { AddressInfo } from 'node:net';
import tls, { createServer, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { pinOfCertificate } from '../../../shared/tls-pin.js';
import { makeSelfSignedCert } from '../../../test/helpers/test-cert.js';
import { dialReplica } from './mesh-dial.js';

let server: Server;
let url: string;
let pin: string;

beforeAll(async () => {
  const cert = makeSelfSignedCert('localhost');
  pin = pinOfCertificate(cert.der);
  server = createServer({ key: cert.key, cert: cert.cert }, (s) => s.end('hi'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** Dials, reads the server's bytes to the end (so the session ticket arrives), and says whether it resumed. */
async function dialOnce(caPin: string): Promise<boolean> {
  const s: TLSSocket = await dialReplica({ meshUrl: url, cluster: 'edge' }, caPin);
  const reused = s.isSessionReused();
  await new Promise<void>((r) => {
    s.on('data', () => {});
    s.on('end', () => {
      s.end();
      r();
    });
  });
  return reused;
}

describe('dialReplica', () => {
  it('checks the pin first, then resumes the pinned session, all on one OpenSSL context', async () => {
    // Watched, not replaced: tls.connect builds a context through it for every dial that brings none of its own.
    const contexts = vi.spyOn(tls, 'createSecureContext');
    try {
      expect(await dialOnce(pin)).toBe(false);
      expect(await dialOnce(pin)).toBe(true);
      expect(await dialOnce(pin)).toBe(true);
      expect(contexts).not.toHaveBeenCalled();
    } finally {
      contexts.mockRestore();
    }
  });

  it('refuses another pin, with no session kept for it', async () => {
    const other = `sha256:${'0'.repeat(64)}`;
    const err = await dialOnce(other).catch((e: unknown) => e);
    expect(isTunnelError(err, 'MESH_UNREACHABLE')).toBe(true);
    expect((err as Error).message).toContain(other);
    expect(await dialOnce(other).catch((e: unknown) => e)).toBeInstanceOf(Error);
  });
});
