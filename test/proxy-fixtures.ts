/**
 * Fixtures for the proxy tests: sample upstreams (plain HTTP, HTTPS with a certificate naming
 * edge-2.clusters.local, a deterministic byte source of any size), a raw CONNECT client over TLS, and
 * streaming sha256 of a response.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type http from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';

/** Deterministic bytes: block i of 64 KiB is filled with (i * 7 + offset) & 255 patterns. */
export function patternBlock(i: number): Buffer {
  const b = Buffer.allocUnsafe(65_536);
  for (let k = 0; k < b.length; k++) b[k] = (i * 7 + k * 13) & 255;
  return b;
}

export function sha256OfPattern(bytes: number): string {
  const h = createHash('sha256');
  for (let i = 0, left = bytes; left > 0; i++, left -= 65_536) {
    const blk = patternBlock(i);
    h.update(left >= blk.length ? blk : blk.subarray(0, left));
  }
  return h.digest('hex');
}

/** Serves /hello, /echo (POST body back), /bytes?n=N (pattern bytes, with backpressure). */
export function sampleHandler(name: string): http.RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/hello') return void res.end(`hello from ${name}`);
    if (url.pathname === '/') {
      res.setHeader('content-type', 'application/json');
      return void res.end(JSON.stringify({ kind: 'APIVersions', versions: ['v1'], served: name }));
    }
    if (url.pathname === '/version') {
      res.setHeader('content-type', 'application/json');
      const v = { major: '1', minor: '30', gitVersion: `v1.30.0+${name}`, platform: 'linux/amd64' };
      return void res.end(JSON.stringify(v));
    }
    if (url.pathname === '/whoami') {
      res.setHeader('content-type', 'application/json');
      return void res.end(JSON.stringify({ served: name, authorization: req.headers.authorization ?? null }));
    }
    if (url.pathname === '/echo') return void req.pipe(res);
    if (url.pathname === '/bytes') {
      const n = Number(url.searchParams.get('n') ?? '0');
      res.writeHead(200, { 'content-length': n, 'content-type': 'application/octet-stream' });
      let i = 0;
      let left = n;
      const pump = (): void => {
        while (left > 0) {
          const blk = patternBlock(i++);
          const part = left >= blk.length ? blk : blk.subarray(0, left);
          left -= part.length;
          if (!res.write(part)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    res.statusCode = 404;
    res.end('not found');
  };
}

export async function listen(server: http.Server | https.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A self-signed certificate for the given DNS names and 127.0.0.1 (openssl CLI). */
export function certFor(names: string[]): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-cert-'));
  try {
    const san = [...names.map((n) => `DNS:${n}`), 'IP:127.0.0.1'].join(',');
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
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        '2',
        '-subj',
        `/CN=${names[0] ?? 'localhost'}`,
        '-addext',
        `subjectAltName=${san}`,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Opens a CONNECT tunnel through the relay (TLS to the relay, CA `relayCa`) and resolves with the socket
 * once the relay answered 200, or rejects with the status line.
 */
export function connectTunnel(
  relayUrl: string,
  relayCa: string,
  target: string,
  key: string,
): Promise<tls.TLSSocket> {
  const u = new URL(relayUrl);
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: u.hostname, port: Number(u.port), ca: relayCa, servername: 'localhost' });
    let buf = '';
    const onData = (c: Buffer): void => {
      buf += c.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      s.off('data', onData);
      const status = buf.slice(0, buf.indexOf('\r\n'));
      if (!/^HTTP\/1\.1 200/.test(status)) {
        s.destroy();
        reject(new Error(status));
        return;
      }
      const rest = Buffer.from(buf.slice(end + 4), 'latin1');
      if (rest.length > 0) s.unshift(rest);
      resolve(s);
    };
    s.on('data', onData);
    s.once('error', reject);
    s.once('secureConnect', () => {
      s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`);
    });
  });
}
