/**
 * A relay under garbage while it proxies: a real relay (hub proxy plugin, loopback), two real agents
 * (WireGuard over wss + stream binding + allowlist dialer) in front of sample HTTP upstreams. While a
 * CONNECT download from agent A runs, garbage arrives on three fronts:
 *   - DERP clients on /derp: an admitted one (a registered cluster key) that sends random payloads to
 *     the hub key and to unknown keys, unknown frame types, a short SendPacket and finally a frame
 *     whose length is over the limit; unadmitted ones that send random frames / random bytes first;
 *   - raw TLS clients that send random bytes to the relay port;
 *   - a plain TCP client that sends random bytes without TLS.
 * The download completes with the right sha256, agent B answers throughout, and the relay closes every
 * garbage client and counts it.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HubProxy, hubProxyPlugin } from '../relay/data/proxy/proxy-plugin.js';
import { generateKeyPair, type KeyPair, keyToBase64 } from '../shared/keys.js';
import { DerpCloseCode } from '../shared/net/derp/close-codes.js';
import {
  encodeSendPacket,
  FRAME_HEADER_LEN,
  FrameType,
  MAX_FRAME_LEN,
  MAX_PACKET_LEN,
} from '../shared/net/derp/frames.js';
import type { DataPlane } from '../tunnel-client/agent/agent.js';
import type { AgentState, Tunnel } from '../tunnel-client/agent/types.js';
import { agentDataPlane } from '../tunnel-client/session/agent-data-plane.js';
import { type TestRelay as DerpTestRelay, type RawClient, rawClient } from './derp-fixtures.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';
import { waitFor } from './helpers/wait.js';
import { connectTunnel, listen, sampleHandler, sha256OfPattern } from './proxy-fixtures.js';

let t: TestRelay;
let hp: HubProxy;
let admin: string;
const upstreams: http.Server[] = [];
const ports: Record<'a' | 'b', number> = { a: 0, b: 0 };
const agents: DataPlane[] = [];
let garbageKeys: KeyPair;

async function register(
  name: string,
  kp = generateKeyPair(),
): Promise<{ tunnel: Tunnel; privateKey: string }> {
  const created = await t.call('POST', '/api/v1/clusters', {
    token: admin,
    body: { name, group: 'default' },
  });
  expect(created.status).toBe(201);
  const reg = await t.call('POST', '/api/v1/register', {
    token: created.body.bootstrap.psk,
    body: { cluster: name, publicKey: keyToBase64(kp.publicKey), agentVersion: '0.1.0' },
  });
  expect(reg.status).toBe(201);
  return { tunnel: reg.body.tunnel as Tunnel, privateKey: keyToBase64(kp.privateKey) };
}

async function startAgent(name: string, upPort: number): Promise<void> {
  const { tunnel, privateKey } = await register(name);
  const state = { caPin: t.relay.caPin, caFile: null, upstream: `http://127.0.0.1:${upPort}`, allow: [] };
  const dp = await agentDataPlane({ session: { probeIntervalMs: 300 } })({
    state: state as unknown as AgentState,
    tunnel,
    privateKey,
    onChange: () => {},
  });
  agents.push(dp);
  await dp.whenUp?.(10_000);
  const connected = async () =>
    (await t.call('GET', `/api/v1/clusters/${name}`, { token: admin })).body.connected;
  await waitFor(connected, 10_000, `the hub to see ${name} connected`, 100);
}

beforeAll(async () => {
  for (const side of ['a', 'b'] as const) {
    const s = http.createServer(sampleHandler(`agent-${side}`));
    upstreams.push(s);
    ports[side] = await listen(s);
  }
  t = await startTestRelay({
    plugins: [
      hubProxyPlugin({ dataPlane: { hub: { status: { statusIntervalMs: 200 } } } }, (p) => {
        hp = p;
      }),
    ],
  });
  admin = t.relay.adminKey!;
  await startAgent('edge-a', ports.a);
  await startAgent('edge-b', ports.b);
  garbageKeys = generateKeyPair();
  await register('garbage', garbageKeys);
}, 40_000);

afterAll(async () => {
  for (const a of agents) await a.close();
  await t?.cleanup();
  for (const s of upstreams) s.close();
});

/** GET through CONNECT; resolves with the body's sha256 and length once the upstream closes. */
function download(
  cluster: string,
  port: number,
  path: string,
  onFirstBytes?: (s: tls.TLSSocket) => void,
): Promise<{ status: string; sha: string; bytes: number; body: Buffer }> {
  return connectTunnel(t.relay.url, t.relay.caPem, `${cluster}.clusters.local:${port}`, admin).then(
    (s) =>
      new Promise((resolve, reject) => {
        const h = createHash('sha256');
        let head = Buffer.alloc(0);
        let status = '';
        let bytes = 0;
        const small: Buffer[] = [];
        let first = true;
        s.on('data', (c: Buffer) => {
          if (!status) {
            head = Buffer.concat([head, c]);
            const end = head.indexOf('\r\n\r\n');
            if (end < 0) return;
            status = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
            c = head.subarray(end + 4);
          }
          h.update(c);
          bytes += c.length;
          if (bytes < 4096) small.push(Buffer.from(c));
          if (first && bytes > 0) {
            first = false;
            onFirstBytes?.(s);
          }
        });
        s.on('end', () => resolve({ status, sha: h.digest('hex'), bytes, body: Buffer.concat(small) }));
        s.on('error', reject);
        s.write(`GET ${path} HTTP/1.1\r\nHost: upstream\r\nConnection: close\r\n\r\n`);
      }),
  );
}

const derpRelay = (): DerpTestRelay =>
  ({ url: `${t.relay.url.replace(/^https/, 'wss')}/derp` }) as DerpTestRelay;

function frame(type: number, body: Buffer): Buffer {
  const f = Buffer.alloc(FRAME_HEADER_LEN + body.length);
  f[0] = type;
  f.writeUInt32BE(body.length, 1);
  body.copy(f, FRAME_HEADER_LEN);
  return f;
}

/** The admitted garbage client: junk the relay must route or skip, then a frame over the length limit. */
async function admittedGarbage(hubKey: Buffer): Promise<{ code: number }> {
  const raw: RawClient = await rawClient(derpRelay(), true, garbageKeys);
  await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerInfo), 5_000, 'server info');
  for (let i = 0; i < 200; i++) {
    const n = 1 + Math.floor(Math.random() * 3000);
    const junk = randomBytes(n);
    if (i % 3 === 0) junk[0] = 1 + (i % 4); // looks like a WireGuard message type
    raw.ws.send(encodeSendPacket(hubKey, junk));
    if (i % 10 === 0) raw.ws.send(encodeSendPacket(randomBytes(32), randomBytes(64)));
    if (i % 25 === 0) raw.ws.send(frame(0x40 + (i % 50), randomBytes(i))); // unknown types are skipped
    if (i % 40 === 0) raw.ws.send(encodeSendPacket(hubKey, randomBytes(MAX_PACKET_LEN)));
  }
  const oversize = Buffer.alloc(FRAME_HEADER_LEN);
  oversize[0] = FrameType.SendPacket;
  oversize.writeUInt32BE(MAX_FRAME_LEN + 1 + Math.floor(Math.random() * 1e6), 1);
  raw.ws.send(oversize);
  return raw.closed;
}

/** An unadmitted client that never handshakes: random frames, then random bytes. */
async function unadmittedGarbage(i: number): Promise<{ code: number }> {
  const raw = await rawClient(derpRelay(), false);
  if (i % 2 === 0) raw.ws.send(frame(0x80 | (i & 0x7f), randomBytes(100 + i)));
  else raw.ws.send(Buffer.concat([Buffer.from([FrameType.ClientInfo, 0, 0, 1, 0]), randomBytes(256)]));
  raw.ws.send(randomBytes(5_000));
  return raw.closed;
}

/**
 * Random bytes over TLS (or plain TCP) to the relay port. Resolves with what the relay answered and
 * whether the relay closed the socket (false: our 20 s guard had to destroy it).
 */
function rawBytes(useTls: boolean): Promise<{ answer: string; closedByRelay: boolean }> {
  const u = new URL(t.relay.url);
  return new Promise((resolve) => {
    const port = Number(u.port);
    const s = useTls
      ? tls.connect({ host: '127.0.0.1', port, ca: t.relay.caPem, servername: 'localhost' })
      : net.connect(port, '127.0.0.1');
    let guard = false;
    let answer = '';
    const timer = setTimeout(() => {
      guard = true;
      s.destroy();
    }, 20_000);
    s.on('error', () => {});
    s.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ answer, closedByRelay: !guard });
    });
    s.once(useTls ? 'secureConnect' : 'connect', () => {
      // Random bytes where the request line should be, then more random bytes and a blank line.
      s.write(randomBytes(200));
      s.write(Buffer.concat([randomBytes(4000), Buffer.from('\r\n\r\n')]));
    });
  });
}

describe('relay under garbage while proxying', () => {
  it('completes agent A download and keeps agent B answering while garbage clients are dropped', async () => {
    const derp = hp.dataPlane.derp.stats;
    const hubDrops0 = hp.dataPlane.hub.device.stats.drops;
    const protocol0 = derp.protocolErrors;
    const auth0 = derp.authFailures;
    const n = 48 * 1024 * 1024;
    const hubKey = hp.dataPlane.hub.publicKey;

    // Agent A's download: paused after the first bytes until one full round of garbage has run.
    let firstRound: () => void = () => {};
    const roundDone = new Promise<void>((r) => {
      firstRound = r;
    });
    let downloading = true;
    const big = download('edge-a', ports.a, `/bytes?n=${n}`, (s) => {
      s.pause();
      void roundDone.then(() => s.resume());
    }).finally(() => {
      downloading = false;
    });

    // Agent B answers small requests throughout.
    const bAnswers: string[] = [];
    const bLoop = (async () => {
      while (downloading) {
        const r = await download('edge-b', ports.b, '/hello');
        bAnswers.push(`${r.status} ${r.body.toString()}`);
      }
    })();

    let rounds = 0;
    const codes: number[] = [];
    let tlsRefused = 0;
    let tcpRefused = 0;
    while (downloading || rounds === 0) {
      const [admitted, un1, un2, overTls, overTcp] = await Promise.all([
        admittedGarbage(hubKey),
        unadmittedGarbage(rounds * 2),
        unadmittedGarbage(rounds * 2 + 1),
        rawBytes(true),
        rawBytes(false),
      ]);
      codes.push(admitted.code, un1.code, un2.code);
      // Over TLS the HTTP server answers 400 and closes; without TLS the handshake fails and it closes.
      if (overTls.closedByRelay && overTls.answer.startsWith('HTTP/1.1 400 ')) tlsRefused++;
      if (overTcp.closedByRelay && !overTcp.answer.includes('HTTP/')) tcpRefused++;
      rounds++;
      if (rounds === 1) firstRound();
    }
    const got = await big;
    await bLoop;

    expect(got.status).toBe('HTTP/1.1 200 OK');
    expect(got.bytes).toBe(n);
    expect(got.sha).toBe(sha256OfPattern(n));
    expect(bAnswers.length).toBeGreaterThan(0);
    for (const a of bAnswers) expect(a).toBe('HTTP/1.1 200 OK hello from agent-b');

    // Every garbage client was closed by the relay and counted.
    expect(rounds).toBeGreaterThanOrEqual(1);
    expect(codes.length).toBe(rounds * 3);
    expect(codes.every((c) => c === DerpCloseCode.Protocol || c === DerpCloseCode.NotAdmitted)).toBe(true);
    expect(derp.protocolErrors - protocol0).toBeGreaterThanOrEqual(rounds * 2);
    expect(derp.protocolErrors - protocol0 + (derp.authFailures - auth0)).toBe(rounds * 3);
    expect(tlsRefused).toBe(rounds);
    expect(tcpRefused).toBe(rounds);
    expect(codes[0]).toBe(DerpCloseCode.Protocol); // the admitted client: the oversize frame
    // The hub device dropped the random payloads addressed to it without harm.
    const hubDrops = hp.dataPlane.hub.device.stats.drops;
    const dropped = (d: typeof hubDrops): number => Object.values(d).reduce((a, b) => a + b, 0);
    expect(dropped(hubDrops) - dropped(hubDrops0)).toBeGreaterThanOrEqual(rounds * 150);

    // Both agents still answer after the storm.
    expect((await download('edge-a', ports.a, '/hello')).body.toString()).toBe('hello from agent-a');
    expect((await download('edge-b', ports.b, '/hello')).body.toString()).toBe('hello from agent-b');
  }, 120_000);
});
