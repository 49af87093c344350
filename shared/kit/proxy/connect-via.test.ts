/**
 * The relay HTTP client and WebSocket through small CONNECT proxies on real loopback sockets: one that
 * forwards (TLS and the CA pin run end to end inside the tunnel), ones that refuse with 403/502, one that
 * answers 200 and then drops the tunnel, one that never answers.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { type AddressInfo, createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { makeSelfSignedCert, type TestCert } from '../../../test/helpers/test-cert.js';
import { isTunnelError } from '../../errors.js';
import { pinOfCertificate } from '../../tls-pin.js';
import { RelayClient } from '../http/client.js';
import { proxyConnectVia } from './connect-via.js';
import { parseProxyUrl, resolveProxySettings } from './proxy-config.js';
import { relayConnectVia } from './transports.js';
import { ProxyWsAgent } from './ws-agent.js';

type Behaviour = 'forward' | 'refuse403' | 'refuse502' | 'drop' | 'silent';

let cert: TestCert;
let relay: HttpsServer;
let relayPort: number;
const proxies: Record<Behaviour, { server: Server; port: number; seen: string[] }> = {} as never;
const sockets = new Set<Socket>();

function proxyServer(kind: Behaviour, tlsCert?: TestCert): Server {
  const seen: string[] = [];
  const onConnection = (c: Socket) => {
    sockets.add(c);
    c.on('error', () => {});
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      c.off('data', onData);
      seen.push(head.slice(0, end));
      const target = /^CONNECT (\S+) /.exec(head)?.[1] ?? '';
      if (kind === 'silent') return;
      if (kind === 'refuse403') return void c.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
      if (kind === 'refuse502') return void c.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
      c.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (kind === 'drop') return void setTimeout(() => c.destroy(), 20);
      const [host, port] = [
        target.slice(0, target.lastIndexOf(':')),
        Number(target.slice(target.lastIndexOf(':') + 1)),
      ];
      const up = netConnect({ host, port });
      sockets.add(up);
      up.on('error', () => c.destroy());
      const rest = Buffer.from(head.slice(end + 4), 'latin1');
      if (rest.length > 0) up.write(rest);
      c.pipe(up).pipe(c);
    };
    c.on('data', onData);
  };
  const server = tlsCert
    ? createTlsServer({ key: tlsCert.key, cert: tlsCert.cert }, onConnection)
    : createServer(onConnection);
  if (!tlsCert) proxies[kind] = { server, port: 0, seen };
  return server;
}

const listen = (s: Server | HttpsServer) =>
  new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));

beforeAll(async () => {
  cert = makeSelfSignedCert();
  relay = createHttpsServer({ key: cert.key, cert: cert.cert }, (_req, res) => res.end('ok'));
  relayPort = await listen(relay);
  for (const k of ['forward', 'refuse403', 'refuse502', 'drop', 'silent'] as Behaviour[]) {
    const s = proxyServer(k);
    (proxies[k] as { port: number }).port = await listen(s);
  }
});

afterAll(() => {
  for (const s of sockets) s.destroy();
  relay.close();
  for (const p of Object.values(proxies)) p.server.close();
});

const proxyUrl = (k: Behaviour, auth = '') => `http://${auth}127.0.0.1:${proxies[k].port}`;

async function get(k: Behaviour, pin: string, auth = ''): Promise<string> {
  const settings = resolveProxySettings({ flag: proxyUrl(k, auth), env: {} });
  const connectVia = relayConnectVia(settings);
  const client = new RelayClient({
    baseUrl: `https://127.0.0.1:${relayPort}`,
    trust: { kind: 'pin', pin },
    timeoutMs: 5_000,
    ...(connectVia ? { connectVia } : {}),
  });
  try {
    return await client.text('GET', '/healthz', { token: null });
  } finally {
    await client.close();
  }
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('relay client through a CONNECT proxy', () => {
  it('forwards, with Proxy-Authorization from the URL and the pin checked inside the tunnel', async () => {
    const pin = pinOfCertificate(cert.der);
    expect(await get('forward', pin, 'u%20ser:p%40ss@')).toBe('ok');
    const req = proxies.forward.seen.at(-1) ?? '';
    expect(req).toMatch(new RegExp(`^CONNECT 127\\.0\\.0\\.1:${relayPort} HTTP/1\\.1`));
    expect(req.toLowerCase()).toContain(
      `proxy-authorization: basic ${Buffer.from('u ser:p@ss').toString('base64').toLowerCase()}`,
    );
    const err = await failure(get('forward', `sha256:${'0'.repeat(64)}`));
    expect(isTunnelError(err, 'CA_PIN_MISMATCH')).toBe(true);
  });

  it.each([
    ['refuse403', '403 Forbidden'],
    ['refuse502', '502 Bad Gateway'],
  ] as const)('%s: PROXY_FAILED naming proxy, destination and answer', async (k, answer) => {
    const err = await failure(get(k, pinOfCertificate(cert.der), 'me:hush@'));
    expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
    expect(err.message).toBe(
      `proxy http://me:***@127.0.0.1:${proxies[k].port} answered ${answer} to CONNECT 127.0.0.1:${relayPort}`,
    );
  });

  it('a tunnel dropped after 200: PROXY_FAILED naming the proxy', async () => {
    const err = await failure(get('drop', pinOfCertificate(cert.der)));
    expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
    expect(err.message).toContain(`proxy ${proxyUrl('drop')} dropped the tunnel to 127.0.0.1:${relayPort}`);
  });

  it('a proxy that never answers: PROXY_FAILED after the deadline', async () => {
    const via = proxyConnectVia(parseProxyUrl(proxyUrl('silent'), 'test'), { timeoutMs: 300 });
    const err = await failure(via('127.0.0.1', relayPort));
    expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
    expect(err.message).toBe(
      `proxy ${proxyUrl('silent')} did not answer CONNECT 127.0.0.1:${relayPort} within 300 ms`,
    );
  });
});

describe('https:// proxy', () => {
  it('TLS to the proxy verified with the proxy CA, then TLS to the relay inside; an unknown proxy CA fails', async () => {
    const proxyCert = makeSelfSignedCert('proxy');
    const server = proxyServer('forward', proxyCert);
    const port = await listen(server);
    try {
      const call = async (ca: string | undefined) => {
        const settings = resolveProxySettings({ flag: `https://localhost:${port}`, flagCa: ca, env: {} });
        const connectVia = relayConnectVia(settings);
        const client = new RelayClient({
          baseUrl: `https://127.0.0.1:${relayPort}`,
          trust: { kind: 'pin', pin: pinOfCertificate(cert.der) },
          timeoutMs: 5_000,
          ...(connectVia ? { connectVia } : {}),
        });
        try {
          return await client.text('GET', '/healthz', { token: null });
        } finally {
          await client.close();
        }
      };
      expect(await call(proxyCert.cert)).toBe('ok');
      // The WebSocket agent: the proxy CA for the proxy, the relay CA (ws option) for the relay.
      const ws = await new Promise<Error | 'open'>((resolve) => {
        const sock = new WebSocket(`wss://127.0.0.1:${relayPort}/derp`, {
          agent: new ProxyWsAgent(parseProxyUrl(`https://localhost:${port}`, 'test'), { ca: proxyCert.cert }),
          ca: cert.cert,
          handshakeTimeout: 3_000,
        });
        sock.on('open', () => resolve('open'));
        sock.on('error', (e) => resolve(e));
      });
      expect((ws as Error).message).toContain('Unexpected server response: 200');
      const err = await failure(call(undefined));
      expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
      expect(err.message).toContain(
        `proxy https://localhost:${port} failed for CONNECT 127.0.0.1:${relayPort}`,
      );
    } finally {
      server.close();
    }
  });
});

describe('WebSocket agent', () => {
  const open = (k: Behaviour) =>
    new Promise<Error | 'open'>((resolve) => {
      const ws = new WebSocket(`wss://127.0.0.1:${relayPort}/derp`, {
        agent: new ProxyWsAgent(parseProxyUrl(proxyUrl(k, 'a:secret@'), 'test')),
        rejectUnauthorized: false,
        handshakeTimeout: 3_000,
      });
      ws.on('open', () => {
        ws.terminate();
        resolve('open');
      });
      ws.on('error', (e) => resolve(e));
    });

  it('a refusal becomes PROXY_FAILED (not "unexpected server response"), without the password', async () => {
    const err = await open('refuse403');
    expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
    expect((err as Error).message).toBe(
      `proxy http://a:***@127.0.0.1:${proxies.refuse403.port} answered 403 Forbidden to CONNECT 127.0.0.1:${relayPort}`,
    );
  });

  it('a proxy that is not listening: PROXY_FAILED naming it', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await new Promise((r) => closed.close(r));
    const err = await new Promise<Error | 'open'>((resolve) => {
      const ws = new WebSocket(`wss://127.0.0.1:${relayPort}/derp`, {
        agent: new ProxyWsAgent(parseProxyUrl(`http://a:secret@127.0.0.1:${port}`, 'test')),
        rejectUnauthorized: false,
        handshakeTimeout: 3_000,
      });
      ws.on('open', () => resolve('open'));
      ws.on('error', (e) => resolve(e));
    });
    expect(isTunnelError(err, 'PROXY_FAILED')).toBe(true);
    expect((err as Error).message).toBe(
      `proxy http://a:***@127.0.0.1:${port} failed for CONNECT 127.0.0.1:${relayPort}: ECONNREFUSED`,
    );
  });

  it('a forwarding proxy carries the TLS session to the server (which is no WebSocket server here)', async () => {
    const before = proxies.forward.seen.length;
    const r = await open('forward');
    // The https test server answers the upgrade with 200 'ok': the TLS session got there through the proxy.
    expect(r).toBeInstanceOf(Error);
    expect((r as Error).message).toContain('Unexpected server response: 200');
    expect(proxies.forward.seen.length).toBe(before + 1);
  });
});
