import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSelfSignedCert, type TestCert } from '../../../test/helpers/test-cert.js';
import { ERROR_CODES, isTunnelError, TunnelError } from '../../errors.js';
import { pinOfCertificate } from '../../tls-pin.js';
import { errorFromResponse, RelayClient } from './client.js';
import { trustFromFlags } from './trust.js';

let cert: TestCert;
let other: TestCert;
let server: Server;
let base: string;
const seen: { auth?: string | undefined; body?: string }[] = [];

beforeAll(async () => {
  cert = makeSelfSignedCert();
  other = makeSelfSignedCert('other');
  server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push({ auth: req.headers.authorization, body });
      if (req.url === '/ok') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ hello: 'world', echo: body ? JSON.parse(body) : null }));
      } else if (req.url === '/denied') {
        res.statusCode = 403;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: { code: 'CLUSTER_DENIED', message: 'cluster edge-1 was denied' } }));
      } else if (req.url === '/html') {
        res.statusCode = 502;
        res.end('<html>bad gateway</html>');
      } else if (req.url === '/big') {
        res.end(Buffer.alloc(5 * 1024 * 1024, 97));
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('{}'), 2_000);
      } else {
        res.statusCode = 404;
        res.end(JSON.stringify({ message: 'Route not found', statusCode: 404 }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function expectCode(p: Promise<unknown>, code: string): Promise<TunnelError> {
  try {
    await p;
  } catch (err) {
    expect(isTunnelError(err), String(err)).toBe(true);
    expect((err as TunnelError).code).toBe(code);
    return err as TunnelError;
  }
  throw new Error(`expected ${code}, got success`);
}

describe('RelayClient with a CA pin', () => {
  it('accepts a self-signed certificate whose pin matches, and sends the bearer token and body', async () => {
    const client = new RelayClient({
      baseUrl: base,
      trust: { kind: 'pin', pin: pinOfCertificate(cert.der) },
      token: 'trk_secret',
    });
    try {
      const res = await client.json<{ hello: string; echo: unknown }>('POST', '/ok', { body: { a: 1 } });
      expect(res).toEqual({ hello: 'world', echo: { a: 1 } });
      expect(seen.at(-1)?.auth).toBe('Bearer trk_secret');
    } finally {
      await client.close();
    }
  });

  it('refuses a certificate with another pin, naming both pins and not the token', async () => {
    const wrong = pinOfCertificate(other.der);
    const client = new RelayClient({
      baseUrl: base,
      trust: { kind: 'pin', pin: wrong },
      token: 'trk_secret',
    });
    const before = seen.length;
    try {
      const err = await expectCode(client.json('GET', '/ok'), 'CA_PIN_MISMATCH');
      expect(err.message).toContain(wrong);
      expect(err.message).toContain(pinOfCertificate(cert.der));
      expect(err.message).not.toContain('trk_secret');
      expect(seen.length).toBe(before);
    } finally {
      await client.close();
    }
  });

  it('refuses the self-signed certificate without a pin (system roots)', async () => {
    const client = new RelayClient({ baseUrl: base, trust: { kind: 'system' } });
    try {
      const err = await expectCode(client.json('GET', '/ok'), 'RELAY_CERT_UNTRUSTED');
      expect(err.message).toMatch(/not trusted \(\w+\); pass --ca-pin/);
    } finally {
      await client.close();
    }
  });

  it('accepts the certificate given as --ca-file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cafile-'));
    try {
      const file = join(dir, 'ca.pem');
      writeFileSync(file, cert.cert);
      const client = new RelayClient({ baseUrl: base, trust: trustFromFlags({ caFile: file }) });
      try {
        expect(await client.json('GET', '/ok')).toMatchObject({ hello: 'world' });
      } finally {
        await client.close();
      }
      writeFileSync(file, other.cert);
      const wrongCa = new RelayClient({ baseUrl: base, trust: trustFromFlags({ caFile: file }) });
      try {
        await expectCode(wrongCa.json('GET', '/ok'), 'RELAY_CERT_UNTRUSTED');
      } finally {
        await wrongCa.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('RelayClient error mapping', () => {
  const client = () =>
    new RelayClient({ baseUrl: base, trust: { kind: 'pin', pin: pinOfCertificate(cert.der) } });

  it('maps the API error body to its code', async () => {
    const c = client();
    const err = await expectCode(c.json('GET', '/denied'), 'CLUSTER_DENIED');
    expect(err.message).toBe('cluster edge-1 was denied');
    await c.close();
  });

  it('maps an uncoded error to RELAY_BAD_RESPONSE with the status', async () => {
    const c = client();
    const err = await expectCode(c.json('GET', '/html'), 'RELAY_BAD_RESPONSE');
    expect(err.message).toContain('502');
    await expectCode(c.json('GET', '/nowhere'), 'RELAY_BAD_RESPONSE');
    await c.close();
  });

  it('caps the response body', async () => {
    const c = client();
    await expectCode(c.text('GET', '/big'), 'RELAY_BAD_RESPONSE');
    await c.close();
  });

  it('enforces the call deadline', async () => {
    const c = new RelayClient({
      baseUrl: base,
      trust: { kind: 'pin', pin: pinOfCertificate(cert.der) },
      timeoutMs: 200,
    });
    await expectCode(c.json('GET', '/slow'), 'TIMEOUT');
    await c.close();
  });

  it('reports a refused connection as RELAY_UNREACHABLE naming the URL', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const c = new RelayClient({ baseUrl: `https://127.0.0.1:${port}`, trust: { kind: 'system' } });
    const err = await expectCode(c.json('GET', '/ok'), 'RELAY_UNREACHABLE');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    await c.close();
  });
});

describe('connectVia (the slot for an HTTP CONNECT proxy)', () => {
  it('runs TLS and the pin check over the socket the hook returns', async () => {
    const targets: string[] = [];
    const proxy = createNetServer((client) => {
      client.once('data', (head: Buffer) => {
        const m = /^CONNECT ([^ ]+):(\d+) HTTP\/1\.1\r\n/.exec(head.toString());
        if (!m) return client.destroy();
        targets.push(`${m[1]}:${m[2]}`);
        const upstream = netConnect(Number(m[2]), m[1]!, () => {
          client.write('HTTP/1.1 200 Connection established\r\n\r\n');
          client.pipe(upstream).pipe(client);
        });
        upstream.on('error', () => client.destroy());
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyPort = (proxy.address() as AddressInfo).port;
    const via = (host: string, port: number) =>
      new Promise<Socket>((resolve, reject) => {
        const s = netConnect(proxyPort, '127.0.0.1', () =>
          s.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`),
        );
        s.once('data', (b: Buffer) =>
          b.toString().startsWith('HTTP/1.1 200') ? resolve(s) : reject(new Error('proxy refused')),
        );
        s.once('error', reject);
      });
    try {
      const ok = new RelayClient({
        baseUrl: base,
        trust: { kind: 'pin', pin: pinOfCertificate(cert.der) },
        connectVia: via,
      });
      expect(await ok.json('GET', '/ok')).toMatchObject({ hello: 'world' });
      await ok.close();
      const bad = new RelayClient({
        baseUrl: base,
        trust: { kind: 'pin', pin: pinOfCertificate(other.der) },
        connectVia: via,
      });
      await expectCode(bad.json('GET', '/ok'), 'CA_PIN_MISMATCH');
      await bad.close();
      expect(targets.length).toBeGreaterThanOrEqual(2);
      expect(targets[0]).toBe(new URL(base).host);
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });
});

describe('errorFromResponse (property)', () => {
  it('keeps known codes and messages, and turns any other body into RELAY_BAD_RESPONSE', () => {
    const codes = Object.keys(ERROR_CODES);
    fc.assert(
      fc.property(
        fc.constantFrom(...codes),
        fc.string({ maxLength: 50 }),
        fc.integer({ min: 300, max: 599 }),
        (code, msg, status) => {
          const e = errorFromResponse('GET', '/x', {
            status,
            contentType: 'application/json',
            body: JSON.stringify({ error: { code, message: msg } }),
          });
          expect(e.code).toBe(code);
          expect(e.message).toBe(msg);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 300, max: 599 }), (body, status) => {
        const e = errorFromResponse('POST', '/y', { status, contentType: '', body });
        expect(e).toBeInstanceOf(TunnelError);
        if (e.code !== 'RELAY_BAD_RESPONSE') expect(codes).toContain(e.code);
        else expect(e.message).toContain(String(status));
      }),
    );
  });
});
