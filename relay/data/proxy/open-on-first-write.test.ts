/**
 * OpenOnFirstWrite under Node's own HTTP client and server over a real loopback TCP connection: the request head
 * http.request writes is what the open receives (the opened transport gets no second copy), the answer comes back
 * through it, and a failed open reaches the caller as its own error with nothing sent.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TunnelError } from '../../../shared/errors.js';
import { OpenOnFirstWrite } from './open-on-first-write.js';

let server: http.Server;
let port: number;
const seen: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end(`answer to ${req.url}`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as net.AddressInfo).port;
});

afterAll(() => server.close());

function dial(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** A GET of `path` over `transport`; resolves with the status and body, rejects with the request's error. */
function get(transport: Duplex, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      method,
      path,
      headers: ['host', 'x', 'connection', 'close'],
      setHost: false,
      createConnection: () => transport,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.end();
  });
}

describe('OpenOnFirstWrite', () => {
  it('opens with the request head and carries the answer back', async () => {
    const firsts: string[] = [];
    const t = new OpenOnFirstWrite(async (first) => {
      firsts.push(first.toString('latin1'));
      const s = await dial();
      s.write(first);
      return s;
    });
    const r = await get(t, '/with-the-open');
    expect(r).toEqual({ status: 200, body: 'answer to /with-the-open' });
    expect(firsts).toHaveLength(1);
    expect(firsts[0]).toMatch(/^GET \/with-the-open HTTP\/1\.1\r\n/);
    expect(firsts[0]!.endsWith('\r\n\r\n')).toBe(true);
    expect(seen.filter((x) => x === 'GET /with-the-open')).toHaveLength(1);
  });

  it('a HEAD answer has no body and ends', async () => {
    const t = new OpenOnFirstWrite(async (first) => {
      const s = await dial();
      s.write(first);
      return s;
    });
    const r = await get(t, '/head', 'HEAD');
    expect(r).toEqual({ status: 200, body: '' });
  });

  it('a failed open fails the request and keeps the open error; nothing is sent', async () => {
    const refused = new TunnelError('STREAM_REFUSED', '@upstream: not on the allowlist');
    const before = seen.length;
    const t = new OpenOnFirstWrite(async () => {
      throw refused;
    });
    await expect(get(t, '/refused')).rejects.toBe(refused);
    expect(t.openError).toBe(refused);
    expect(t.destroyed).toBe(true);
    expect(seen.length).toBe(before);
  });

  it('a transport destroyed while it opens destroys the opened one', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let dialed!: (s: net.Socket) => void;
    const opened = new Promise<net.Socket>((r) => {
      dialed = r;
    });
    const t = new OpenOnFirstWrite(async () => {
      const s = await dial();
      dialed(s);
      await gate;
      return s;
    });
    t.on('error', () => {});
    t.write('GET / HTTP/1.1\r\n\r\n');
    const s = await opened;
    t.destroy();
    release();
    await once(s, 'close');
    expect(s.destroyed).toBe(true);
  });
});
