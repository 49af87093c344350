/**
 * The hub -> agent proxies in one process over real sockets: a real relay (startRelay with the hub
 * proxy plugin on a loopback port), a real registration, the agent's WireGuard session over wss with
 * the stream binding and allowlist dialer, and a sample HTTP upstream. Clients are real: curl through
 * CONNECT, Node's https and ws through the path proxy.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { type HubProxy, hubProxyPlugin } from '../relay/data/proxy/proxy-plugin.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import type { DataPlane } from '../tunnel-client/agent/agent.js';
import type { AgentState, Tunnel } from '../tunnel-client/agent/types.js';
import { agentDataPlane } from '../tunnel-client/session/agent-data-plane.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';
import { waitFor } from './helpers/wait.js';
import { connectTunnel } from './proxy-fixtures.js';

const run = promisify(execFile);

let t: TestRelay;
let hp: HubProxy;
let admin: string;
let upstream: http.Server;
let upPort: number;
let agentDp: DataPlane;
let agent3: DataPlane | undefined;
let caFile: string;

async function startUpstream(): Promise<void> {
  upstream = http.createServer((req, res) => {
    if (req.url === '/hello') return void res.end(`hello from upstream (${req.method})`);
    if (req.url === '/headers') return void res.end(JSON.stringify(req.rawHeaders));
    if (req.url?.startsWith('/echo')) {
      res.writeHead(200, { 'x-seen-auth': String(req.headers.authorization ?? 'none') });
      return void req.pipe(res);
    }
    if (req.url === '/hang') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('started\n');
      return;
    }
    if (req.url?.startsWith('/slow')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let i = 0;
      const iv = setInterval(() => {
        res.write(`tick ${i}\n`);
        if (++i === 3) {
          clearInterval(iv);
          res.end();
        }
      }, 50);
      return;
    }
    res.statusCode = 404;
    res.end('nope');
  });
  const wss = new WebSocketServer({ noServer: true });
  wss.on('connection', (ws) => ws.on('message', (m, bin) => ws.send(bin ? m : `echo:${m.toString()}`)));
  upstream.on('upgrade', (req, socket, head) => {
    if (req.url === '/ws')
      return wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    // Any other protocol (kubectl exec's SPDY/3.1): answer 101 and echo raw bytes, upper-cased.
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => socket.write(d.toString().toUpperCase()));
    socket.on('end', () => socket.end());
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  upPort = (upstream.address() as AddressInfo).port;
}

async function key(role: string): Promise<string> {
  const r = await t.call('POST', '/api/v1/tokens', { token: admin, body: { role } });
  expect(r.status).toBe(201);
  return r.body.token as string;
}

async function register(name: string, group = 'default'): Promise<{ tunnel: Tunnel; privateKey: string }> {
  const created = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name, group } });
  expect(created.status).toBe(201);
  const kp = generateKeyPair();
  const reg = await t.call('POST', '/api/v1/register', {
    token: created.body.bootstrap.psk,
    body: { cluster: name, publicKey: keyToBase64(kp.publicKey), agentVersion: '0.1.0' },
  });
  expect(reg.status).toBe(201);
  return { tunnel: reg.body.tunnel as Tunnel, privateKey: keyToBase64(kp.privateKey) };
}

beforeAll(async () => {
  await startUpstream();
  t = await startTestRelay({
    plugins: [
      hubProxyPlugin({ dataPlane: { hub: { status: { statusIntervalMs: 200 } } } }, (p) => {
        hp = p;
      }),
    ],
  });
  admin = t.relay.adminKey!;
  caFile = join(t.dir, 'relay-ca.pem');
  writeFileSync(caFile, t.relay.caPem);
  const { tunnel, privateKey } = await register('edge-1');
  const state = {
    caPin: t.relay.caPin,
    caFile: null,
    upstream: `http://127.0.0.1:${upPort}`,
    allow: [],
  } as unknown as AgentState;
  agentDp = await agentDataPlane({ session: { probeIntervalMs: 300 } })({
    state,
    tunnel,
    privateKey,
    onChange: () => {},
  });
  await agentDp.whenUp?.(10_000);
  // The hub's view (handshake + fresh datagrams) is what the proxies check.
  const connected = async () =>
    (await t.call('GET', '/api/v1/clusters/edge-1', { token: admin })).body.connected;
  await waitFor(connected, 10_000, 'the hub to see the agent connected', 100);
}, 30_000);

afterAll(async () => {
  await agentDp?.close();
  await agent3?.close();
  await t?.cleanup();
  upstream?.close();
});

function curlConnect(target: string, extra: string[] = []) {
  return run(
    'curl',
    [
      '-sS',
      '-p',
      '-x',
      t.relay.url,
      '--proxy-cacert',
      caFile,
      '--max-time',
      '20',
      '-w',
      '\n%{http_connect}',
      ...extra,
      target,
    ],
    { encoding: 'utf8' },
  ).then(
    (r) => ({ ok: true, out: r.stdout, err: r.stderr }),
    (e: { stdout: string; stderr: string }) => ({ ok: false, out: e.stdout, err: e.stderr }),
  );
}

describe('CONNECT proxy', () => {
  it('curl reaches the upstream through CONNECT edge-1.clusters.local:<upstream port>', async () => {
    const r = await curlConnect(`http://edge-1.clusters.local:${upPort}/hello`, [
      '--proxy-header',
      `Proxy-Authorization: Bearer ${admin}`,
    ]);
    expect(r.err).toBe('');
    expect(r.out).toBe('hello from upstream (GET)\n200');
    expect(hp.connectStats.established).toBeGreaterThan(0);
  });

  it('accepts the key as Basic proxy credentials (proxy URL user info)', async () => {
    const u = new URL(t.relay.url);
    u.username = 'key';
    u.password = admin;
    const r = await run('curl', [
      '-sS',
      '-p',
      '-x',
      u.toString(),
      '--proxy-cacert',
      caFile,
      '--max-time',
      '20',
      `http://edge-1.clusters.local:${upPort}/hello`,
    ]);
    expect(r.stdout).toBe('hello from upstream (GET)');
  });

  it('answers 407 without a key or with a wrong one, 403 for a viewer, 404 for another group and an unknown cluster', async () => {
    const target = `http://edge-1.clusters.local:${upPort}/hello`;
    const none = await curlConnect(target);
    expect(none.ok).toBe(false);
    expect(none.out.trim()).toBe('407');
    const wrong = await curlConnect(target, ['--proxy-header', 'Proxy-Authorization: Bearer trk_wrong']);
    expect(wrong.out.trim()).toBe('407');
    const viewer = await key('viewer');
    const v = await curlConnect(target, ['--proxy-header', `Proxy-Authorization: Bearer ${viewer}`]);
    expect(v.out.trim()).toBe('403');
    const other = await key('group-editor:other');
    const o = await curlConnect(target, ['--proxy-header', `Proxy-Authorization: Bearer ${other}`]);
    expect(o.out.trim()).toBe('404');
    const unknown = await curlConnect(`http://nope.clusters.local:${upPort}/`, [
      '--proxy-header',
      `Proxy-Authorization: Bearer ${admin}`,
    ]);
    expect(unknown.out.trim()).toBe('404');
  });

  it("another group's cluster answers exactly as a missing one on CONNECT, the path proxy and upgrades", async () => {
    const other = await key('group-editor:other');
    const u = new URL(t.relay.url);
    const exchange = (head: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const s = tls.connect({
          host: u.hostname,
          port: Number(u.port),
          ca: t.relay.caPem,
          servername: 'localhost',
        });
        let got = '';
        s.on('data', (d: Buffer) => {
          got += d.toString();
        });
        s.on('end', () => resolve(got));
        s.on('error', reject);
        s.write(head);
      });
    const heads = (name: string): string[] => [
      `CONNECT ${name}.clusters.local:${upPort} HTTP/1.1\r\nHost: ${name}.clusters.local:${upPort}\r\n` +
        `Proxy-Authorization: Bearer ${other}\r\n\r\n`,
      `GET /api/v1/clusters/${name}/proxy/hello HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer ${other}\r\n` +
        'Connection: close\r\n\r\n',
      `GET /api/v1/clusters/${name}/proxy/ws HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer ${other}\r\n` +
        'Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    ];
    const strip = (reply: string): string => reply.replace(/\r\ndate: [^\r]*/i, '');
    const hidden = heads('edge-1');
    const missing = heads('nope-1');
    for (let i = 0; i < hidden.length; i++) {
      const h = strip(await exchange(hidden[i]!));
      const m = strip(await exchange(missing[i]!));
      expect(h, hidden[i]).toMatch(/^HTTP\/1\.1 404 /);
      expect(h).not.toContain('default');
      expect(h.replaceAll('edge-1', 'nope-1')).toBe(m);
    }
  });

  it('answers 503 at once for a cluster whose agent is not connected', async () => {
    await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'idle-1' } });
    const started = Date.now();
    const r = await curlConnect(`http://idle-1.clusters.local:${upPort}/`, [
      '--proxy-header',
      `Proxy-Authorization: Bearer ${admin}`,
    ]);
    expect(r.out.trim()).toBe('503');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('answers 502 when the agent refuses the port (not on its allowlist)', async () => {
    const r = await curlConnect(`http://edge-1.clusters.local:${upPort + 1}/`, [
      '--proxy-header',
      `Proxy-Authorization: Bearer ${admin}`,
    ]);
    expect(r.out.trim()).toBe('502');
  });
});

describe('path proxy', () => {
  const base = () => `${t.relay.url}/api/v1/clusters/edge-1/proxy`;
  const get = (
    path: string,
    token: string | null,
    o: { method?: string; body?: string; headers?: Record<string, string | string[]> } = {},
  ) =>
    request(`${base()}${path}`, {
      method: (o.method ?? 'GET') as 'GET',
      headers: { ...o.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(o.body !== undefined ? { body: o.body } : {}),
      dispatcher: t.agent,
    });

  it('forwards GET and streams a POST body back, without forwarding the relay key', async () => {
    const r = await get('/hello', admin);
    expect(r.statusCode).toBe(200);
    expect(await r.body.text()).toBe('hello from upstream (GET)');
    const e = await get('/echo', admin, { method: 'POST', body: 'x'.repeat(300_000) });
    expect(e.statusCode).toBe(200);
    expect(e.headers['x-seen-auth']).toBe('none');
    expect((await e.body.text()).length).toBe(300_000);
  });

  it('streams a chunked response as it is produced', async () => {
    const r = await get('/slow', admin);
    const got = await r.body.text();
    expect(got).toBe('tick 0\ntick 1\ntick 2\n');
  });

  it('lets a viewer GET but not POST; 401 without a key; 404 for an unknown cluster', async () => {
    const viewer = await key('viewer');
    expect((await get('/hello', viewer)).statusCode).toBe(200);
    // Impersonation is on: the relay leaves the write to the agent, which has no token to act as the viewer.
    const p = await get('/echo', viewer, { method: 'POST', body: 'x' });
    expect(p.statusCode).toBe(403);
    expect((await p.body.json()) as object).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: expect.stringMatching(
        /^role viewer may not write .*no service-account token to act as the caller/,
      ),
      details: { causes: [{ reason: 'FORBIDDEN' }] },
    });
    const n = await get('/hello', null);
    expect(n.statusCode).toBe(401);
    await n.body.dump();
    const u = await request(`${t.relay.url}/api/v1/clusters/nope/proxy/`, {
      headers: { authorization: `Bearer ${admin}` },
      dispatcher: t.agent,
    });
    expect(u.statusCode).toBe(404);
    await u.body.dump();
  });

  it('never forwards a client Authorization or Impersonate-* header; impersonate: false restores the read-only gate', async () => {
    const viewer = await key('viewer');
    const r = await get('/headers', admin, {
      headers: {
        'Impersonate-User': 'x',
        'IMPERSONATE-GROUP': ['system:masters', 'y'],
        'impersonate-extra-a': 'b',
      },
    });
    const seen = (await r.body.json()) as string[];
    expect(seen.filter((h, i) => i % 2 === 0 && /^(authorization|impersonate-)/i.test(h))).toEqual([]);
    const off = await t.call('PUT', '/api/v1/clusters/edge-1/values', {
      token: admin,
      body: { impersonate: false },
    });
    expect(off.status).toBe(200);
    try {
      const p = await get('/echo', viewer, { method: 'POST', body: 'x' });
      expect(p.statusCode).toBe(403);
      expect((await p.body.json()) as object).toMatchObject({
        message: 'role viewer may not write through the proxy of clusters in group default',
        details: { causes: [{ reason: 'FORBIDDEN' }] },
      });
    } finally {
      await t.call('PUT', '/api/v1/clusters/edge-1/values', { token: admin, body: {} });
    }
  });

  it('passes a WebSocket upgrade through and echoes messages', async () => {
    const ws = new WebSocket(`${base().replace('https:', 'wss:')}/ws`, {
      ca: t.relay.caPem,
      headers: { authorization: `Bearer ${admin}` },
    });
    await once(ws, 'open');
    ws.send('ping');
    const [m] = (await once(ws, 'message')) as [Buffer];
    expect(m.toString()).toBe('echo:ping');
    const big = Buffer.alloc(200_000, 7);
    ws.send(big);
    const [b] = (await once(ws, 'message')) as [Buffer];
    expect(Buffer.compare(b, big)).toBe(0);
    ws.close();
    await once(ws, 'close');
  });

  it('passes any other Upgrade (SPDY/3.1) through raw; a viewer may not upgrade', async () => {
    const u = new URL(t.relay.url);
    const raw = (token: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const s = tls.connect({
          host: u.hostname,
          port: Number(u.port),
          ca: t.relay.caPem,
          servername: 'localhost',
        });
        let got = '';
        s.on('data', (d: Buffer) => {
          got += d.toString();
          if (got.includes('\r\n\r\n') && got.startsWith('HTTP/1.1 101') && !got.includes('HELLO'))
            s.write('hello');
          if (got.includes('HELLO')) s.end();
        });
        s.on('end', () => resolve(got));
        s.on('error', reject);
        s.write(
          'POST /api/v1/clusters/edge-1/proxy/exec?command=sh HTTP/1.1\r\nHost: relay\r\n' +
            `Authorization: Bearer ${token}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n`,
        );
      });
    const ok = await raw(admin);
    expect(ok).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\nUpgrade: SPDY\/3\.1/);
    expect(ok.endsWith('HELLO')).toBe(true);
    const viewer = await key('viewer');
    const denied = await raw(viewer);
    expect(denied).toMatch(/^HTTP\/1\.1 403/);
    expect(denied).toContain('"FORBIDDEN"');
  });

  it('carries 200 concurrent requests', async () => {
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const r = await get(`/echo?i=${i}`, admin, { method: 'POST', body: `req-${i}` });
        return r.body.text();
      }),
    );
    expect(results).toEqual(results.map((_, i) => `req-${i}`));
  });
});

describe('revocation', () => {
  it('deleting a cluster ends its open CONNECT streams at once', async () => {
    const { tunnel, privateKey } = await register('edge-3');
    const state = { caPin: t.relay.caPin, caFile: null, upstream: `http://127.0.0.1:${upPort}`, allow: [] };
    agent3 = await agentDataPlane({ session: { probeIntervalMs: 300 } })({
      state: state as unknown as AgentState,
      tunnel,
      privateKey,
      onChange: () => {},
    });
    const connected = async () =>
      (await t.call('GET', '/api/v1/clusters/edge-3', { token: admin })).body.connected;
    await waitFor(connected, 10_000, 'edge-3 connected', 100);
    const s = await connectTunnel(t.relay.url, t.relay.caPem, `edge-3.clusters.local:${upPort}`, admin);
    s.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString();
    });
    while (!got.includes('started')) await new Promise((r) => setTimeout(r, 20));
    const closed = new Promise((r) => s.once('close', r));
    const deletedAt = Date.now();
    expect((await t.call('DELETE', '/api/v1/clusters/edge-3', { token: admin })).status).toBe(200);
    await closed;
    expect(Date.now() - deletedAt).toBeLessThan(2_000);
  });
});
