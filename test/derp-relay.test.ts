/**
 * The DERP relay end to end over real TLS WebSockets on 127.0.0.1: forwarding, the handshake, admission,
 * policy, duplicate keys, PeerGone, the in-process client and protocol violations.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createDerpServer } from '../relay/data/derp/server.js';
import { generateKeyPair } from '../shared/keys.js';
import { encodeSendPacket, FrameType, PeerGoneReason } from '../shared/net/derp/frames.js';
import {
  rawClient,
  startClient,
  startRelay,
  type TestClient,
  type TestRelay,
  testCert,
} from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  await relay?.close();
  relay = undefined;
});

function client(r: TestRelay, opts: Parameters<typeof startClient>[1] = {}): TestClient {
  const c = startClient(r, opts);
  clients.push(c);
  return c;
}

describe('DERP relay over TLS WebSocket', () => {
  it('forwards payloads byte for byte in both directions, from 0 to 65,535 bytes', async () => {
    relay = await startRelay();
    const a = client(relay);
    const b = client(relay);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const marker = Buffer.from('MARKER-7f3a: the relay must not touch this');
    const sizes = [0, 1, 1400, 16 * 1024, 65_535];
    const payloads = sizes.map((n, i) =>
      i === 0 ? Buffer.alloc(0) : Buffer.concat([marker, Buffer.alloc(n, i)]).subarray(0, n),
    );
    payloads.push(marker);
    for (const p of payloads) expect(a.client.send(b.keyPair.publicKey, p)).toBe(true);
    expect(b.client.send(a.keyPair.publicKey, marker)).toBe(true);
    await waitFor(() => b.received.length === payloads.length && a.received.length === 1, 5000, 'packets');
    expect(b.received.map((r) => r.payload.toString('hex'))).toEqual(payloads.map((p) => p.toString('hex')));
    for (const r of b.received) expect(r.src.equals(a.keyPair.publicKey)).toBe(true);
    expect(a.received[0]!.payload.equals(marker)).toBe(true);
    expect(a.received[0]!.src.equals(b.keyPair.publicKey)).toBe(true);
    // The onPacket hook saw the marker unchanged, with the right src and dst.
    const seen = relay.routed.find((r) => r.payload.equals(marker) && r.dst.equals(b.keyPair.publicKey));
    expect(seen?.src.equals(a.keyPair.publicKey)).toBe(true);
    expect(relay.derp.stats.clients).toBe(2);
  });

  it('property: any sequence of payloads arrives unchanged and in order', async () => {
    relay = await startRelay();
    const a = client(relay);
    const b = client(relay);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 2000 }),
            fc.integer({ min: 0, max: 65_535 }).map((n) => randomBytes(n)),
          ),
          { minLength: 1, maxLength: 12 },
        ),
        async (payloads) => {
          b.received.length = 0;
          for (const p of payloads) expect(a.client.send(b.keyPair.publicKey, p)).toBe(true);
          await waitFor(() => b.received.length === payloads.length, 10_000, 'payloads');
          expect(b.received.map((r) => r.payload.toString('hex'))).toEqual(
            payloads.map((p) => Buffer.from(p).toString('hex')),
          );
        },
      ),
      { numRuns: 15 },
    );
    expect(relay.derp.stats.droppedBytes).toBe(0);
  });

  it('reassembles frames split across WebSocket messages and splits coalesced ones', async () => {
    relay = await startRelay();
    const b = client(relay);
    await b.client.whenConnected(5000);
    const raw = await rawClient(relay, true);
    relay.admitted.add(raw.keyPair.publicKey.toString('base64'));
    await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'server info');
    const f1 = encodeSendPacket(b.keyPair.publicKey, Buffer.from('split-one'));
    const f2 = encodeSendPacket(b.keyPair.publicKey, Buffer.from('two'));
    const f3 = encodeSendPacket(b.keyPair.publicKey, Buffer.from('three'));
    const stream = Buffer.concat([f1, f2, f3]);
    // Byte by byte for f1, then f2+f3 in one message.
    for (let i = 0; i < f1.length; i++) raw.ws.send(stream.subarray(i, i + 1));
    raw.ws.send(stream.subarray(f1.length));
    await waitFor(() => b.received.length === 3, 5000, 'three packets');
    expect(b.received.map((r) => r.payload.toString())).toEqual(['split-one', 'two', 'three']);
    raw.ws.close();
  });

  it('refuses a key that is not admitted (4001) and counts it', async () => {
    relay = await startRelay();
    const c = client(relay, { admit: false });
    await waitFor(() => c.states.some((s) => s.state === 'reconnecting'), 5000, 'refusal');
    const ev = c.states.find((s) => s.state === 'reconnecting')!;
    expect(ev.closeCode).toBe(4001);
    expect(ev.error?.code).toBe('DERP_AUTH_FAILED');
    expect(c.client.connected).toBe(false);
    expect(relay.derp.stats.refusedNotAdmitted).toBeGreaterThanOrEqual(1);
    expect(relay.derp.stats.clients).toBe(0);
  });

  it('drops a client that never completes the handshake after the timeout', async () => {
    relay = await startRelay({ limits: { handshakeTimeoutMs: 300 } });
    const raw = await rawClient(relay, false);
    const t0 = Date.now();
    const closed = await raw.closed;
    expect(closed.code).toBe(4005);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(raw.frames[0]?.type).toBe(FrameType.ServerKey);
    expect(relay.derp.stats.handshakeTimeouts).toBe(1);
    expect(relay.derp.stats.handshaking).toBe(0);
  });

  it('drops packets outside the policy, counts them and never tells the sender', async () => {
    const denied = generateKeyPair();
    relay = await startRelay({ allow: (_s, d) => !d.equals(denied.publicKey) });
    const a = client(relay);
    const b = client(relay);
    const c = client(relay, { keyPair: denied });
    const gone: number[] = [];
    const a2 = client(relay, { keyPair: a.keyPair, onPeerGone: (_p, r) => gone.push(r) });
    a.client.close();
    await Promise.all([
      a2.client.whenConnected(5000),
      b.client.whenConnected(5000),
      c.client.whenConnected(5000),
    ]);
    for (let i = 0; i < 5; i++) a2.client.send(denied.publicKey, Buffer.from(`secret-${i}`));
    a2.client.send(b.keyPair.publicKey, Buffer.from('allowed'));
    await waitFor(() => b.received.length === 1, 5000, 'allowed packet');
    expect(relay.derp.stats.dropped.policy).toBe(5);
    expect(c.received).toHaveLength(0);
    expect(gone).toHaveLength(0);
    expect(relay.routed.some((r) => r.dst.equals(denied.publicKey))).toBe(false);
  });

  it('answers an unknown destination with a rate-limited PeerGone(NotHere)', async () => {
    relay = await startRelay();
    const gone: Array<{ peer: Buffer; reason: number }> = [];
    const a = client(relay, { onPeerGone: (peer, reason) => gone.push({ peer: Buffer.from(peer), reason }) });
    await a.client.whenConnected(5000);
    const nobody = generateKeyPair().publicKey;
    for (let i = 0; i < 10; i++) a.client.send(nobody, Buffer.from('x'));
    await waitFor(() => relay!.derp.stats.dropped.unknown_dest === 10, 5000, 'drops');
    await waitFor(() => gone.length >= 3, 5000, 'peer gone');
    await new Promise((r) => setTimeout(r, 100));
    expect(gone.length).toBe(3); // burst of 3, the rest within the same second suppressed
    expect(gone.every((g) => g.reason === PeerGoneReason.NotHere && g.peer.equals(nobody))).toBe(true);
  });

  it('replaces the first connection when the same key connects again', async () => {
    relay = await startRelay();
    const b = client(relay);
    const first = client(relay);
    await Promise.all([first.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const firstClosed = waitFor(() => first.states.some((s) => s.closeCode === 4003), 5000, 'replaced');
    const second = client(relay, { keyPair: first.keyPair });
    await second.client.whenConnected(5000);
    await firstClosed;
    const replaced = first.states.find((s) => s.closeCode === 4003)!;
    expect(replaced.error?.code).toBe('CONFLICT');
    expect(replaced.delayMs).toBeGreaterThanOrEqual(8000); // a live twin backs off long instead of flapping
    first.client.close();
    expect(relay.derp.stats.replaced).toBe(1);
    b.client.send(first.keyPair.publicKey, Buffer.from('to the newest'));
    await waitFor(() => second.received.length === 1, 5000, 'delivery to the new connection');
    expect(first.received).toHaveLength(0);
  });

  it('closeClient disconnects a key and its peers get PeerGone(Disconnected)', async () => {
    relay = await startRelay();
    const gone: Buffer[] = [];
    const hub = client(relay, {
      onPeerGone: (p, r) => r === PeerGoneReason.Disconnected && gone.push(Buffer.from(p)),
    });
    const agent = client(relay);
    await Promise.all([hub.client.whenConnected(5000), agent.client.whenConnected(5000)]);
    agent.client.send(hub.keyPair.publicKey, Buffer.from('hello hub'));
    await waitFor(() => hub.received.length === 1, 5000, 'packet');
    relay.admitted.delete(agent.keyPair.publicKey.toString('base64'));
    expect(relay.derp.closeClient(agent.keyPair.publicKey, 'cluster deleted')).toBe(true);
    await waitFor(() => gone.length === 1, 5000, 'peer gone');
    expect(gone[0]!.equals(agent.keyPair.publicKey)).toBe(true);
    await waitFor(() => agent.states.some((s) => s.closeCode === 4004), 5000, 'close code');
    // It reconnects, and is now refused.
    await waitFor(() => agent.states.some((s) => s.closeCode === 4001), 10_000, 'refused on reconnect');
    expect(relay.derp.isConnected(agent.keyPair.publicKey)).toBe(false);
  });

  it('routes between an in-process client and a WebSocket client', async () => {
    relay = await startRelay();
    const hubKey = generateKeyPair();
    const got: Buffer[] = [];
    const local = relay.derp.connectLocal(hubKey, { onPacket: (_s, p) => got.push(Buffer.from(p)) });
    const agent = client(relay);
    await agent.client.whenConnected(5000);
    agent.client.send(hubKey.publicKey, Buffer.from('agent->hub'));
    await waitFor(() => got.length === 1, 5000, 'local delivery');
    expect(got[0]!.toString()).toBe('agent->hub');
    expect(local.send(agent.keyPair.publicKey, Buffer.from('hub->agent'))).toBe(true);
    await waitFor(() => agent.received.length === 1, 5000, 'ws delivery');
    expect(agent.received[0]!.src.equals(hubKey.publicKey)).toBe(true);
    expect(agent.received[0]!.payload.toString()).toBe('hub->agent');
    local.close();
    expect(relay.derp.isConnected(hubKey.publicKey)).toBe(false);
  });

  it('keeps the sender connected when an in-process handler throws', async () => {
    const errors: string[] = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (_o: object, msg: string) => errors.push(msg) };
    relay = await startRelay({ logger });
    const hubKey = generateKeyPair();
    const got: string[] = [];
    relay.derp.connectLocal(hubKey, {
      onPacket: (_s, p) => {
        if (p.toString() === 'boom') throw new Error('handler bug');
        got.push(p.toString());
      },
    });
    const agent = client(relay);
    await agent.client.whenConnected(5000);
    agent.client.send(hubKey.publicKey, Buffer.from('boom'));
    agent.client.send(hubKey.publicKey, Buffer.from('after'));
    await waitFor(() => got.length === 1, 5000, 'second packet');
    expect(got).toEqual(['after']);
    expect(errors).toEqual(['derp: local onPacket handler threw']);
    expect(agent.client.connected).toBe(true);
    expect(agent.client.stats.connects).toBe(1);
  });

  it('closes only the client that sends an oversize frame (DERP_PROTOCOL, 4002)', async () => {
    relay = await startRelay();
    const a = client(relay);
    const b = client(relay);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const raw = await rawClient(relay, true);
    relay.admitted.add(raw.keyPair.publicKey.toString('base64'));
    await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'server info');
    raw.ws.send(Buffer.from([FrameType.SendPacket, 0x00, 0x01, 0x00, 0x21])); // 65,569 > 64 KiB + 32
    expect((await raw.closed).code).toBe(4002);
    expect(relay.derp.stats.protocolErrors).toBe(1);
    a.client.send(b.keyPair.publicKey, Buffer.from('still fine'));
    await waitFor(() => b.received.length === 1, 5000, 'others unaffected');
  });

  it('answers bad upgrades with plain HTTP statuses: 400 without subprotocol, 426 not websocket, 404 elsewhere', async () => {
    relay = await startRelay();
    const wsStatus = (url: string, protocol?: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(url, protocol ? [protocol] : [], { rejectUnauthorized: false });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on('open', () => {
          resolve(101);
          ws.terminate();
        });
        ws.on('error', () => {});
      });
    expect(await wsStatus(relay.url)).toBe(400);
    expect(await wsStatus(relay.url, 'chat')).toBe(400);
    expect(await wsStatus(relay.url.replace('/derp', '/other'), 'derp')).toBe(404);
    expect(await wsStatus(`${relay.url}?x=1`, 'derp')).toBe(101);
    const port = Number(new URL(relay.url).port);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/derp',
        rejectUnauthorized: false,
        headers: { Connection: 'Upgrade', Upgrade: 'DERP' },
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(426);
    expect(relay.derp.stats.clients).toBe(0);
  });

  it('passes upgrades for other paths to onOtherUpgrade', async () => {
    const c = testCert();
    const https = createServer({ key: c.key, cert: c.cert });
    const derp = createDerpServer({
      keyPair: generateKeyPair(),
      admission: { isAdmitted: () => true },
      policy: { canSend: () => true },
    });
    const seen: string[] = [];
    derp.attach(https, {
      onOtherUpgrade: (req, socket) => {
        seen.push(req.url ?? '');
        socket.end('HTTP/1.1 418 I am a teapot\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      },
    });
    await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
    try {
      const port = (https.address() as AddressInfo).port;
      const status = await new Promise<number>((resolve) => {
        const ws = new WebSocket(`wss://127.0.0.1:${port}/api/v1/clusters/x/proxy/exec`, ['derp'], {
          rejectUnauthorized: false,
        });
        ws.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
        ws.on('error', () => {});
      });
      expect(status).toBe(418);
      expect(seen).toEqual(['/api/v1/clusters/x/proxy/exec']);
    } finally {
      await derp.shutdown();
      https.closeAllConnections();
      await new Promise<void>((r) => https.close(() => r()));
    }
  });

  it('refuses a relay whose certificate does not match the pin, before any handshake', async () => {
    relay = await startRelay();
    const wrong = `sha256:${'00'.repeat(32)}`;
    const c = client(relay, { caPin: wrong });
    await waitFor(() => c.states.some((s) => s.state === 'reconnecting'), 5000, 'pin failure');
    const ev = c.states.find((s) => s.state === 'reconnecting')!;
    expect(ev.error?.code).toBe('CA_PIN_MISMATCH');
    expect(c.states.some((s) => s.state === 'connected')).toBe(false);
    expect(relay.derp.stats.clients).toBe(0);
  });

  it('refuses a relay that presents a different DERP server key', async () => {
    relay = await startRelay();
    const c = client(relay, { serverPublicKey: generateKeyPair().publicKey });
    await waitFor(() => c.states.some((s) => s.state === 'reconnecting'), 5000, 'key failure');
    expect(c.states.find((s) => s.state === 'reconnecting')!.error?.code).toBe('DERP_AUTH_FAILED');
    expect(relay.derp.stats.clients).toBe(0);
  });
});
