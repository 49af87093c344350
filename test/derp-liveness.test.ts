/**
 * Relay liveness over real sockets: shutdown sends Restarting and clients come back; a silent (black-holed)
 * connection is noticed by both ends; slow (async) admission holds early packets instead of losing them.
 */

import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../shared/keys.js';
import { encodeSendPacket, FrameType } from '../shared/net/derp/frames.js';
import {
  type BlackholeProxy,
  blackholeProxy,
  rawClient,
  startClient,
  startRelay,
  type TestClient,
  type TestRelay,
} from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];
const proxies: BlackholeProxy[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  for (const p of proxies.splice(0)) await p.close();
  await relay?.close();
  relay = undefined;
});

describe('DERP relay liveness', () => {
  it('shutdown sends Restarting; the client waits about reconnectInMs and reconnects to the new server', async () => {
    relay = await startRelay({ limits: { restartReconnectInMs: 300, restartTryForMs: 3000 } });
    const peer = startClient(relay);
    const c = startClient(relay, { backoff: { baseMs: 60_000, maxMs: 60_000 } }); // plain backoff would wait >= 30 s
    clients.push(peer, c);
    await Promise.all([c.client.whenConnected(5000), peer.client.whenConnected(5000)]);
    await relay.restart();
    await waitFor(
      () => c.client.stats.connects === 2 && peer.client.stats.connects === 2,
      10_000,
      'reconnect',
    );
    const rec = c.states.find((s) => s.state === 'reconnecting')!;
    expect(rec.closeCode).toBe(1001);
    expect(rec.delayMs).toBeLessThanOrEqual(300);
    peer.client.send(c.keyPair.publicKey, Buffer.from('after restart'));
    await waitFor(() => c.received.length === 1, 5000, 'packet after restart');
    expect(c.received[0]!.payload.toString()).toBe('after restart');
  });

  it('both ends notice a black-holed connection; the client reconnects when the path heals', async () => {
    relay = await startRelay({ limits: { pingIntervalMs: 300 } });
    const port = Number(new URL(relay.url).port);
    const bh = await blackholeProxy(port);
    proxies.push(bh);
    const c = startClient(relay, {
      url: `wss://127.0.0.1:${bh.port}/derp`,
      pingIntervalMs: 200,
      deadAfterMs: 800,
      backoff: { baseMs: 100, maxMs: 400 },
    });
    clients.push(c);
    await c.client.whenConnected(5000);
    bh.setBlackhole(true);
    const t0 = Date.now();
    await waitFor(() => c.states.some((s) => s.state === 'reconnecting'), 5000, 'client timeout');
    // Silence is measured from the last frame received, which came at most one ping interval earlier.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(800 - 200 - 50);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(c.states.find((s) => s.state === 'reconnecting')!.error?.code).toBe('TIMEOUT');
    await waitFor(() => relay!.derp.stats.pingTimeouts >= 1, 5000, 'server ping timeout');
    expect(relay.derp.isConnected(c.keyPair.publicKey)).toBe(false);
    bh.setBlackhole(false);
    await waitFor(() => c.client.stats.connects === 2, 10_000, 'reconnect after heal');
    expect(relay.derp.isConnected(c.keyPair.publicKey)).toBe(true);
  });

  it('after the Restarting window ends without a relay, backoff starts again from the first attempt', async () => {
    relay = await startRelay({ limits: { restartReconnectInMs: 50, restartTryForMs: 400 } });
    const c = startClient(relay, { backoff: { baseMs: 100, maxMs: 30_000 } });
    clients.push(c);
    relay.admitted.add(c.keyPair.publicKey.toString('base64'));
    await c.client.whenConnected(5000);
    await relay.close(); // sends Restarting, then the relay stays down
    relay = undefined;
    const attempts = () => c.states.filter((s) => s.state === 'reconnecting').map((s) => s.attempt);
    // Fast retries inside the window raise the count; the first retry after it must start again at 1.
    await waitFor(() => attempts().some((a, i, all) => i > 0 && a < all[i - 1]!), 8000, 'backoff reset');
    const after = attempts();
    const reset = after.findIndex((a, i) => i > 0 && a < after[i - 1]!);
    expect(after[reset]).toBe(1);
  });

  it('keeps retrying with backoff while the relay is down and connects once it is up', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const pending = await startRelay(); // only for its URL shape, pin and key; closed at once
    const { pin, keyPair } = pending;
    await pending.close();
    const c = startClient({ ...pending, url: `wss://127.0.0.1:${port}/derp` } as TestRelay, {
      backoff: { baseMs: 50, maxMs: 200 },
      caPin: pin,
      serverPublicKey: keyPair.publicKey,
    });
    clients.push(c);
    await waitFor(() => c.states.filter((s) => s.state === 'reconnecting').length >= 3, 10_000, 'retries');
    const delays = c.states.filter((s) => s.state === 'reconnecting').map((s) => s.delayMs!);
    expect(delays.every((d) => d >= 25 && d <= 200)).toBe(true);
    expect(c.states.find((s) => s.state === 'reconnecting')!.error?.code).toBe('CLOSED');
    relay = await startRelay({ port, keyPair });
    relay.admitted.add(c.keyPair.publicKey.toString('base64'));
    await c.client.whenConnected(10_000);
    expect(relay.derp.isConnected(c.keyPair.publicKey)).toBe(true);
  });

  it('holds packets sent right after ClientInfo while an async admission check runs', async () => {
    let release: (ok: boolean) => void = () => {};
    relay = await startRelay();
    const b = startClient(relay);
    clients.push(b);
    await b.client.whenConnected(5000);
    await relay.restart({
      admission: {
        isAdmitted: (k) =>
          k.equals(b.keyPair.publicKey) ? true : new Promise<boolean>((resolve) => (release = resolve)),
      },
    });
    await waitFor(
      () => b.client.stats.connects === 2 && relay!.derp.isConnected(b.keyPair.publicKey),
      10_000,
      'b back',
    );
    const keyPair = generateKeyPair();
    const raw = await rawClient(relay, true, keyPair);
    await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerKey), 5000, 'server key');
    await new Promise((r) => setTimeout(r, 50)); // ClientInfo is on its way; admission now pending
    raw.ws.send(encodeSendPacket(b.keyPair.publicKey, Buffer.from('early bird')));
    await new Promise((r) => setTimeout(r, 100));
    expect(b.received).toHaveLength(0);
    expect(relay.derp.stats.handshaking).toBe(1);
    release(true);
    await waitFor(() => b.received.length === 1, 5000, 'held packet delivered');
    expect(b.received[0]!.payload.toString()).toBe('early bird');
    expect(raw.frames.some((f) => f.type === FrameType.ServerInfo)).toBe(true);
    raw.ws.terminate();
  });
});
