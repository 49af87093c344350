import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { realClock } from '../../shared/clock.js';
import type { MuxSession } from '../../shared/net/mux/mux-session.js';
import { openTarget } from '../../shared/net/mux/open-target.js';
import { muxOverDuplex } from '../../shared/net/mux/transport.js';
import { duplexPair } from '../../test/helpers/duplex-pair.js';
import { makeCaSignedCert, makeSelfSignedCert } from '../../test/helpers/test-cert.js';
import { Allowlist, formatHostPort, parseHostPort } from './allowlist.js';
import { Dialer } from './dialer.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

async function echoServer(): Promise<number> {
  const srv = net.createServer({ allowHalfOpen: true }, (c) => {
    c.on('data', (d) => c.write(d));
    c.on('end', () => c.end('|eof'));
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  cleanup.push(() => srv.close());
  return (srv.address() as net.AddressInfo).port;
}

function hubWithDialer(
  allow: Allowlist,
  dialTimeoutMs = 2_000,
  upstreamCa?: string,
): { hub: MuxSession; dialer: Dialer } {
  const [a, b] = duplexPair();
  const hub = muxOverDuplex(a, { role: 'client', clock: realClock });
  const agent = muxOverDuplex(b, { role: 'server', clock: realClock });
  const dialer = new Dialer({ allowlist: allow, clock: realClock, dialTimeoutMs, upstreamCa });
  agent.on('stream', (s) => dialer.handle(s));
  cleanup.push(() => {
    hub.close();
    agent.close();
  });
  return { hub, dialer };
}

describe('Allowlist', () => {
  it('parses HOST:PORT and [v6]:PORT, and formats back the same', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.domain(),
          fc.ipV4(),
          fc.ipV6().map((v) => `[${v}]`),
        ),
        fc.integer({ min: 1, max: 65535 }),
        (host, port) => {
          const hp = parseHostPort(`${host}:${port}`);
          expect(hp).not.toBeNull();
          expect(formatHostPort(hp!)).toBe(`${host.toLowerCase()}:${port}`);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const hp = parseHostPort(s);
        if (hp) expect(hp.port >= 1 && hp.port <= 65535).toBe(true);
      }),
    );
    for (const bad of ['', 'host', 'host:0', 'host:65536', ':80', 'a b:80', '[zz]:1', 'h:-1'])
      expect(parseHostPort(bad)).toBeNull();
  });

  it('resolve() never throws, and only dials what the list allows', () => {
    const a = new Allowlist('https://kube.local:6443', ['127.0.0.1:8080', '[::1]:9000']);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.integer({ min: -5, max: 70000 }).map((p) => `@port:${p}`),
          fc.constantFrom('@upstream', 'kube.local:6443', '[::1]:9000', '127.0.0.1:8080', '127.0.0.1:8081'),
        ),
        (text) => {
          const r = a.resolve(text);
          expect(['dial', 'refused', 'bad']).toContain(r.kind);
          if (r.kind === 'dial') expect(a.allows(r.addr)).toBe(true);
        },
      ),
    );
  });

  it('resolves @upstream, @port:N and HOST:PORT against the list', () => {
    const a = new Allowlist('https://Kube.Local:6443', ['127.0.0.1:8080']);
    expect(a.resolve('@upstream')).toEqual({ kind: 'dial', addr: a.upstream, tls: true, identity: null });
    expect(a.resolve('@upstream?user=tunnel-relay:k_1&group=tunnel-relay:viewer')).toMatchObject({
      kind: 'dial',
      identity: { user: 'tunnel-relay:k_1', groups: ['tunnel-relay:viewer'], readOnly: false },
    });
    expect(a.resolve('@upstream?user=a%0d%0ab').kind).toBe('bad');
    expect(a.resolve('@port:6443')).toEqual({
      kind: 'dial',
      addr: { host: 'kube.local', port: 6443 },
      tls: false,
    });
    expect(a.resolve('@port:8080')).toEqual({
      kind: 'dial',
      addr: { host: '127.0.0.1', port: 8080 },
      tls: false,
    });
    expect(a.resolve('@port:22').kind).toBe('refused');
    expect(a.resolve('@port:x').kind).toBe('bad');
    expect(a.resolve('KUBE.local:6443').kind).toBe('dial');
    expect(a.resolve('kube.local:6444').kind).toBe('refused');
    expect(a.resolve('no-port').kind).toBe('bad');
    expect(new Allowlist(null, []).resolve('@upstream').kind).toBe('refused');
    expect(() => new Allowlist('ftp://x', [])).toThrow(/scheme/);
    expect(() => new Allowlist(null, ['x'])).toThrow(/HOST:PORT/);
  });
});

describe('Dialer', () => {
  it('dials an allowed target and pipes both ways with half-close', async () => {
    const port = await echoServer();
    const { hub, dialer } = hubWithDialer(new Allowlist(`http://127.0.0.1:${port}`, []));
    const s = await openTarget(hub, '@upstream', { clock: realClock });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.end('ping');
    await once(s, 'end');
    expect(Buffer.concat(chunks).toString()).toBe('ping|eof');
    expect(dialer.stats.dialed).toBe(1);
  });

  it('resumes the TLS session of an https upstream on its next connections; a bad one is forgotten', async () => {
    const { caCert, key, cert } = makeCaSignedCert('DNS:localhost,IP:127.0.0.1');
    const resumed: boolean[] = [];
    const srv = tls.createServer({ key, cert }, (c) => {
      resumed.push(c.isSessionReused());
      c.on('data', (d) => c.write(d));
      c.on('end', () => c.end('|eof'));
    });
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    cleanup.push(() => srv.close());
    const port = (srv.address() as net.AddressInfo).port;
    const { hub, dialer } = hubWithDialer(new Allowlist(`https://127.0.0.1:${port}`, []), 2_000, caCert);
    // Watched, not replaced: tls.connect builds a context through it for every dial that brings none of its own.
    const contexts = vi.spyOn(tls, 'createSecureContext');
    cleanup.push(() => contexts.mockRestore());
    for (let i = 0; i < 3; i++) {
      const s = await openTarget(hub, '@upstream', { clock: realClock });
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      s.end(`ping${i}`);
      await once(s, 'end');
      expect(Buffer.concat(chunks).toString()).toBe(`ping${i}|eof`);
    }
    expect(resumed).toEqual([false, true, true]);
    // One OpenSSL context (with the CA) for all three dials, not one per dial.
    expect(contexts).toHaveBeenCalledTimes(1);
    expect(dialer.tlsSessionsKept).toBe(1);
    // The upstream's certificate changes to one the agent does not trust: the dial fails, the session is dropped.
    srv.setSecureContext({ ...makeSelfSignedCert(), sessionIdContext: 'other' });
    const failed = await openTarget(hub, '@upstream', { clock: realClock }).catch((e: Error) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(dialer.tlsSessionsKept).toBe(0);
  });

  it('delivers the bytes sent with the open to the upstream, before and in order with later ones', async () => {
    const port = await echoServer();
    const { hub, dialer } = hubWithDialer(new Allowlist(`http://127.0.0.1:${port}`, []));
    const s = await openTarget(hub, '@upstream', { clock: realClock, first: Buffer.from('first,') });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.end('then');
    await once(s, 'end');
    expect(Buffer.concat(chunks).toString()).toBe('first,then|eof');
    expect(dialer.stats.dialed).toBe(1);
  });

  it('refuses an open that carries bytes as clearly as one without, and the bytes reach no upstream', async () => {
    let accepted = 0;
    const srv = net.createServer((c) => {
      accepted++;
      c.destroy();
    });
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    cleanup.push(() => srv.close());
    const port = (srv.address() as net.AddressInfo).port;
    const { hub, dialer } = hubWithDialer(new Allowlist(null, [`127.0.0.1:${port}`]));
    const first = Buffer.from('GET / HTTP/1.1\r\n\r\n');
    await expect(openTarget(hub, `127.0.0.1:${port + 1}`, { clock: realClock, first })).rejects.toMatchObject(
      { code: 'STREAM_REFUSED', message: expect.stringContaining('not allowed') },
    );
    await new Promise<void>((r) => srv.close(() => r()));
    await expect(openTarget(hub, `127.0.0.1:${port}`, { clock: realClock, first })).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringContaining('ECONNREFUSED'),
    });
    expect(accepted).toBe(0);
    expect(dialer.stats).toMatchObject({ refused: 1, failed: 1, dialed: 0 });
  });

  it('refuses a target off the allowlist with STREAM_REFUSED, without dialing', async () => {
    const port = await echoServer();
    const { hub, dialer } = hubWithDialer(new Allowlist(`http://127.0.0.1:${port}`, []));
    await expect(openTarget(hub, `127.0.0.1:${port + 1}`, { clock: realClock })).rejects.toMatchObject({
      code: 'STREAM_REFUSED',
      message: expect.stringContaining('not allowed'),
    });
    expect(dialer.stats).toMatchObject({ refused: 1, dialed: 0 });
  });

  it('reports a failed dial as UPSTREAM_FAILED naming the address', async () => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    const port = (srv.address() as net.AddressInfo).port;
    await new Promise((r) => srv.close(r));
    const { hub } = hubWithDialer(new Allowlist(null, [`127.0.0.1:${port}`]));
    await expect(openTarget(hub, `127.0.0.1:${port}`, { clock: realClock })).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringContaining(`127.0.0.1:${port}: ECONNREFUSED`),
    });
  });

  it('gives up a dial after its timeout', async () => {
    // 192.0.2.1 (TEST-NET-1) is not routed: the connect hangs or fails fast; either way it must end.
    const { hub } = hubWithDialer(new Allowlist(null, ['192.0.2.1:9']), 300);
    await expect(openTarget(hub, '192.0.2.1:9', { clock: realClock })).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
    });
  });

  it('resets the hub stream with UPSTREAM_FAILED when the upstream resets mid-stream', async () => {
    const srv = net.createServer((c) => {
      c.write('partial');
      setTimeout(() => c.resetAndDestroy(), 20);
    });
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    cleanup.push(() => srv.close());
    const port = (srv.address() as net.AddressInfo).port;
    const { hub } = hubWithDialer(new Allowlist(null, [`127.0.0.1:${port}`]));
    const s = await openTarget(hub, `127.0.0.1:${port}`, { clock: realClock });
    s.resume();
    const [err] = (await once(s, 'error')) as [Error & { code: string }];
    expect(err.code).toBe('UPSTREAM_FAILED');
  });
});
