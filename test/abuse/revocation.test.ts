/**
 * Abuse replay (security issue #14): an access key opens pipes through the hub proxies, then loses
 * its access. Every pipe it opened must end within a second: CONNECT tunnels, path-proxy upgrades
 * (kubectl exec's SPDY upgrade) and long plain requests (watches). The same for a key that reaches
 * its expiry while its pipes are open, and for pipes to a cluster that is denied or deleted.
 * Through the real `tunnel-relay serve` process and a real `tunnel-client` agent.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import type tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTunnel, listen } from '../proxy-fixtures.js';
import { type RelayWithAgent, startRelayWithAgents } from './relay-agent.js';
import { abuseScale } from './scale.js';

/** The promised bound: a pipe ends within this long after its key is revoked or expires. */
const END_WITHIN_MS = 1_000;

let relay: RelayWithAgent;
let echo: net.Server;
let echoPort: number;
let upstream: http.Server;

/** Upstream: `/watch` streams a line every 100 ms and never ends; any Upgrade gets 101, then echoes upper-cased. */
function startUpstream(): http.Server {
  const s = http.createServer((req, res) => {
    if (req.url !== '/watch') return void res.end('plain');
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('watching\n');
    const tick = setInterval(() => res.write('event\n'), 100);
    res.on('close', () => clearInterval(tick));
  });
  s.on('upgrade', (req, socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => socket.write(d.toString().toUpperCase()));
    socket.on('error', () => {});
  });
  return s;
}

/** Resolves with the text the socket receives from now on, once `until` holds for it; rejects on close or timeout. */
function readText(socket: net.Socket, until: (text: string) => boolean, ms = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => done(new Error(`timed out; got ${JSON.stringify(text)}`)), ms);
    const onData = (d: Buffer): void => {
      text += d.toString('latin1');
      if (until(text)) done();
    };
    const onClose = (): void => done(new Error(`closed; got ${JSON.stringify(text)}`));
    const done = (err?: Error): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      if (err) reject(err);
      else resolve(text);
    };
    socket.on('data', onData);
    socket.on('close', onClose);
  });
}

interface Pipe {
  kind: 'connect' | 'upgrade' | 'watch';
  socket: tls.TLSSocket;
  /** Date.now() when the socket closed. */
  closed: Promise<number>;
}

function track(kind: Pipe['kind'], socket: tls.TLSSocket): Pipe {
  socket.on('error', () => {});
  return { kind, socket, closed: once(socket, 'close').then(() => Date.now()) };
}

async function openConnect(key: string, cluster = 'edge'): Promise<Pipe> {
  const s = await connectTunnel(relay.url, relay.ca, `${cluster}.clusters.local:${echoPort}`, key);
  const answer = readText(s, (t) => t === 'ping');
  s.write('ping');
  await answer;
  return track('connect', s);
}

async function openUpgrade(key: string, cluster = 'edge'): Promise<Pipe> {
  const s = await relay.connectTls();
  const head = readText(s, (t) => t.includes('\r\n\r\n'));
  s.write(
    `POST /api/v1/clusters/${cluster}/proxy/api/v1/namespaces/x/pods/p/exec HTTP/1.1\r\n` +
      `Host: relay\r\nAuthorization: Bearer ${key}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n`,
  );
  expect((await head).split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
  const echoed = readText(s, (t) => t === 'ABC');
  s.write('abc');
  await echoed;
  return track('upgrade', s);
}

async function openWatch(key: string, cluster = 'edge'): Promise<Pipe> {
  const s = await relay.connectTls();
  const first = readText(s, (t) => t.includes('event\n'));
  s.write(
    `GET /api/v1/clusters/${cluster}/proxy/watch HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer ${key}\r\n\r\n`,
  );
  expect((await first).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  return track('watch', s);
}

/** `count` pipes of each kind, opened at once. */
async function openPipes(key: string, count: number, cluster = 'edge'): Promise<Pipe[]> {
  const opening: Promise<Pipe>[] = [];
  for (let i = 0; i < count; i++) {
    opening.push(openConnect(key, cluster), openUpgrade(key, cluster), openWatch(key, cluster));
  }
  return Promise.all(opening);
}

/** For each pipe: ms from `t0` to its close, or null if it was still open `waitMs` after t0. */
async function endTimes(pipes: Pipe[], t0: number, waitMs: number): Promise<Array<number | null>> {
  const deadline = new Promise<null>((r) => setTimeout(() => r(null), Math.max(0, t0 + waitMs - Date.now())));
  return Promise.all(pipes.map((p) => Promise.race([p.closed.then((at) => at - t0), deadline])));
}

function expectAllEndedWithin(pipes: Pipe[], ends: Array<number | null>, ms: number): void {
  const late = pipes
    .map((p, i) => ({ kind: p.kind, endedAfterMs: ends[i] }))
    .filter((e) => e.endedAfterMs === null || e.endedAfterMs! > ms);
  expect(late, `pipes still open (null) or ended later than ${ms} ms`).toEqual([]);
}

beforeAll(async () => {
  echo = net.createServer((s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  const bound = echo.address();
  if (bound === null || typeof bound === 'string') throw new Error('the echo server has no TCP port');
  echoPort = bound.port;
  upstream = startUpstream();
  const upPort = await listen(upstream);
  const flags = ['--allow', `127.0.0.1:${echoPort}`];
  relay = await startRelayWithAgents({
    agents: [
      { cluster: 'edge', flags },
      { cluster: 'edge-denied', flags },
    ],
    upstream: `http://127.0.0.1:${upPort}`,
  });
}, 90_000);

afterAll(async () => {
  await relay?.stop();
  echo?.close();
  upstream?.closeAllConnections();
  upstream?.close();
});

describe('pipes end when their access key ends', () => {
  it('revoking a key ends its CONNECT tunnels, upgrades and watches within 1 s; other keys keep theirs', async () => {
    const key = await relay.createKey('group-editor:default');
    const other = await relay.createKey('group-editor:default');
    const pipes = await openPipes(key.token, abuseScale());
    const kept = await openConnect(other.token);
    const t0 = Date.now();
    const revoked = await relay.api('DELETE', `/api/v1/tokens/${key.id}`);
    expect(revoked.status).toBe(200);
    expectAllEndedWithin(pipes, await endTimes(pipes, t0, END_WITHIN_MS + 2_000), END_WITHIN_MS);

    const stillEchoes = readText(kept.socket, (t) => t === 'ping');
    kept.socket.write('ping');
    await stillEchoes;
    kept.socket.destroy();
    // And the revoked key opens nothing new.
    await expect(openConnect(key.token)).rejects.toThrow(/407/);
  });

  it('a key that expires ends its pipes at its expiry, not before', async () => {
    const expiresInS = 1 + Math.ceil(abuseScale() / 4);
    const key = await relay.createKey('group-editor:default', `${expiresInS}s`);
    const pipes = await openPipes(key.token, abuseScale());
    expect(key.expiresAt).not.toBeNull();
    const expiresAt = key.expiresAt!;
    expect(Date.now(), 'the pipes opened before the key expired').toBeLessThan(expiresAt);
    const ends = await endTimes(pipes, expiresAt, END_WITHIN_MS + 2_000);
    expectAllEndedWithin(pipes, ends, END_WITHIN_MS);
    for (const e of ends) expect(e!).toBeGreaterThanOrEqual(0);
  });
});

describe('pipes end when their cluster loses access', () => {
  it('denying the cluster ends the pipes to it within 1 s', async () => {
    const pipes = await openPipes(relay.adminKey, abuseScale(), 'edge-denied');
    const t0 = Date.now();
    const denied = await relay.api('POST', '/api/v1/clusters/edge-denied/deny');
    expect(denied.status).toBe(200);
    expectAllEndedWithin(pipes, await endTimes(pipes, t0, END_WITHIN_MS + 2_000), END_WITHIN_MS);
  });

  it('deleting the cluster ends the pipes to it within 1 s', async () => {
    const pipes = await openPipes(relay.adminKey, abuseScale(), 'edge');
    const t0 = Date.now();
    const deleted = await relay.api('DELETE', '/api/v1/clusters/edge');
    expect(deleted.status).toBe(200);
    expectAllEndedWithin(pipes, await endTimes(pipes, t0, END_WITHIN_MS + 2_000), END_WITHIN_MS);
  });
});
