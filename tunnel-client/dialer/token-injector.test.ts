import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../shared/clock.js';
import type { MuxStream } from '../../shared/net/mux/mux-stream.js';
import { openTarget } from '../../shared/net/mux/open-target.js';
import { muxOverDuplex } from '../../shared/net/mux/transport.js';
import { upstreamTarget } from '../../shared/net/mux/upstream-identity.js';
import { duplexPair } from '../../test/helpers/duplex-pair.js';
import { Allowlist } from './allowlist.js';
import { Dialer } from './dialer.js';
import { injectedHeaders } from './token-injector.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

async function setup(o: { tokenFile?: boolean } = {}) {
  const upstream = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        auth: req.headers.authorization ?? null,
        imp: req.headers['impersonate-user'] ?? null,
        raw: req.rawHeaders,
      }),
    );
  });
  upstream.on('upgrade', (req, socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\nX-Auth: ${req.headers.authorization}\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => socket.write(d));
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const port = (upstream.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'token-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'agent-token-1\n');
  const [a, b] = duplexPair();
  const hub = muxOverDuplex(a, { role: 'client', clock: realClock });
  const agent = muxOverDuplex(b, { role: 'server', clock: realClock });
  const dialer = new Dialer({
    allowlist: new Allowlist(`http://127.0.0.1:${port}`, []),
    clock: realClock,
    upstreamTokenFile: o.tokenFile === false ? undefined : tokenFile,
  });
  agent.on('stream', (s) => dialer.handle(s));
  cleanup.push(() => {
    hub.close();
    agent.close();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { hub, tokenFile, port };
}

/** Sends one HTTP/1.1 request on a stream the way the hub's path proxy does, returns the raw answer. */
async function ask(s: MuxStream, head: string): Promise<string> {
  let got = '';
  s.on('data', (d: Buffer) => {
    got += d.toString();
  });
  s.write(head);
  await once(s, 'end');
  return got;
}

describe('token injection for @upstream', () => {
  it('replaces the client credential, drops Impersonate-*, and re-reads the token file per request', async () => {
    const { hub, tokenFile } = await setup();
    const req =
      'GET /x HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer client\r\nImpersonate-User: admin\r\nConnection: close\r\n\r\n';
    const first = await ask(await openTarget(hub, '@upstream', { clock: realClock }), req);
    expect(first).toMatch(/^HTTP\/1\.1 200/);
    expect(JSON.parse(first.slice(first.indexOf('\r\n\r\n') + 4))).toMatchObject({
      auth: 'Bearer agent-token-1',
      imp: null,
    });
    writeFileSync(tokenFile, 'agent-token-2');
    const second = await ask(await openTarget(hub, '@upstream', { clock: realClock }), req);
    expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)).auth).toBe('Bearer agent-token-2');
  });

  it('applies to upgrades too, then carries bytes both ways', async () => {
    const { hub } = await setup();
    const s = await openTarget(hub, '@upstream', { clock: realClock });
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString();
    });
    s.write('POST /exec HTTP/1.1\r\nHost: relay\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
    while (!got.includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
    expect(got).toMatch(/^HTTP\/1\.1 101/);
    expect(got).toContain('X-Auth: Bearer agent-token-1');
    s.write('ping');
    while (!got.endsWith('ping')) await new Promise((r) => setTimeout(r, 10));
    s.destroy();
  });

  it('leaves CONNECT-style targets untouched', async () => {
    const { hub, port } = await setup();
    // @port:N is the upstream's port: raw bytes, the client's own Authorization reaches the upstream.
    const allowed = await ask(
      await openTarget(hub, `@port:${port}`, { clock: realClock }),
      'GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer client\r\nConnection: close\r\n\r\n',
    );
    expect(JSON.parse(allowed.slice(allowed.indexOf('\r\n\r\n') + 4)).auth).toBe('Bearer client');
  });

  it('injectedHeaders keeps end-to-end headers only', () => {
    expect(
      injectedHeaders(
        ['Accept', 'a', 'AUTHORIZATION', 'x', 'Impersonate-Group', 'g', 'Connection', 'close'],
        't',
      ),
    ).toEqual(['Accept', 'a', 'authorization', 'Bearer t']);
  });
});

const CLIENT_CREDENTIAL = fc
  .tuple(
    fc.constantFrom(
      'authorization',
      'impersonate-user',
      'impersonate-group',
      'impersonate-uid',
      'impersonate-extra-scopes',
    ),
    fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
  )
  .map(([name, upper]) => [...name].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join(''));

/** Header names and values: plain ones mixed with client credentials in any case, any number of times. */
const HEADER_LIST = fc.array(
  fc.tuple(
    fc.oneof(CLIENT_CREDENTIAL, fc.constantFrom('Accept', 'X-Trace', 'User-Agent')),
    fc.stringMatching(/^[!-~]{1,20}$/),
  ),
  { maxLength: 12 },
);

const CALLER = { user: 'tunnel-relay:k_abc', groups: ['tunnel-relay:viewer'], readOnly: false };

describe('header filter (no client credential survives)', () => {
  it('keeps the agent token and the hub-named caller only, whatever the case or repetition', () => {
    fc.assert(
      fc.property(HEADER_LIST, fc.boolean(), (pairs, impersonate) => {
        const out = injectedHeaders(pairs.flat(), 'agent', impersonate ? CALLER : null);
        const sensitive: string[] = [];
        for (let i = 0; i < out.length; i += 2) {
          const k = out[i]!.toLowerCase();
          if (k === 'authorization' || k.startsWith('impersonate-')) sensitive.push(`${k}=${out[i + 1]}`);
        }
        const want = ['authorization=Bearer agent'];
        if (impersonate)
          want.push('impersonate-user=tunnel-relay:k_abc', 'impersonate-group=tunnel-relay:viewer');
        expect(sensitive).toEqual(want);
      }),
    );
  });

  it('sends exactly the caller the hub named, over a real stream and upstream', async () => {
    const { hub } = await setup();
    const req =
      'GET /api HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer client\r\nIMPERSONATE-USER: admin\r\n' +
      'impersonate-group: system:masters\r\nImpersonate-Group: system:masters\r\nConnection: close\r\n\r\n';
    const s = await openTarget(hub, upstreamTarget(CALLER), { clock: realClock });
    const got = await ask(s, req);
    const raw = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).raw as string[];
    const sensitive = raw.flatMap((v, i) =>
      i % 2 === 0 && /^(authorization|impersonate-)/i.test(v) ? [`${v.toLowerCase()}=${raw[i + 1]}`] : [],
    );
    expect(sensitive).toEqual([
      'authorization=Bearer agent-token-1',
      'impersonate-user=tunnel-relay:k_abc',
      'impersonate-group=tunnel-relay:viewer',
    ]);
  });

  it('refuses a read-only caller the relay left to the API server when the agent has no token', async () => {
    const { hub } = await setup({ tokenFile: false });
    await expect(
      openTarget(hub, upstreamTarget({ ...CALLER, readOnly: true }), { clock: realClock }),
    ).rejects.toMatchObject({
      code: 'STREAM_REFUSED',
      message: expect.stringContaining('no service-account token to act as the caller'),
    });
  });
});
