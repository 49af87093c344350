/**
 * A client that stops reading must not slow the others: its packets pile up in its own bounded queue and
 * are dropped there (counted), while two healthy clients keep exchanging every packet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FrameType } from '../shared/net/derp/frames.js';
import { rawClient, startClient, startRelay, type TestClient, type TestRelay } from './derp-fixtures.js';
import { pollUntil, sleep, waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  await relay?.close();
  relay = undefined;
});

describe('DERP relay with a stuck client', () => {
  it('drops the stuck client’s packets in its own queue while two others exchange every packet', async () => {
    relay = await startRelay({
      limits: {
        queueDepth: 32,
        writeHighWaterBytes: 256 * 1024,
        writeTimeoutMs: 120_000,
        pingIntervalMs: 120_000,
      },
    });
    const a = startClient(relay);
    const b = startClient(relay);
    clients.push(a, b);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const stuck = await rawClient(relay, true);
    relay.admitted.add(stuck.keyPair.publicKey.toString('base64'));
    await waitFor(() => stuck.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'stuck handshake');
    stuck.ws.pause(); // stops reading its TCP socket: the relay's writes to it back up

    const bulk = Buffer.alloc(16 * 1024, 0xab);
    const rounds = 1500; // 24 MiB towards the stuck client, far more than socket buffers hold
    let sentAB = 0;
    let sentBA = 0;
    for (let i = 0; i < rounds; i++) {
      // The sending clients' own sockets may back up briefly (send() -> false): wait, never drop here.
      while (!a.client.send(stuck.keyPair.publicKey, bulk)) await sleep(1);
      if (i % 4 === 0) {
        const n = Buffer.alloc(8);
        n.writeUInt32BE(sentAB++, 0);
        while (!a.client.send(b.keyPair.publicKey, n)) await sleep(1);
        const m = Buffer.alloc(8);
        m.writeUInt32BE(sentBA++, 0);
        while (!b.client.send(a.keyPair.publicKey, m)) await sleep(1);
      }
    }
    await waitFor(
      () => b.received.length === sentAB && a.received.length === sentBA,
      20_000,
      'a<->b traffic',
    );
    // Every packet between the healthy pair arrived, in order.
    expect(b.received.map((r) => r.payload.readUInt32BE(0))).toEqual([...Array(sentAB).keys()]);
    expect(a.received.map((r) => r.payload.readUInt32BE(0))).toEqual([...Array(sentBA).keys()]);
    const stats = relay.derp.stats;
    expect(stats.dropped.queue_head).toBeGreaterThan(0);
    // Only the stuck client's packets were dropped; nothing else.
    expect(stats.dropped.queue_head + stats.dropped.gone_disconnected).toBeLessThanOrEqual(rounds);
    expect(stats.dropped.unknown_dest + stats.dropped.policy).toBe(0);
    expect(relay.derp.isConnected(stuck.keyPair.publicKey)).toBe(true);
    stuck.ws.terminate();
  });

  it('terminates a client whose socket makes no progress for writeTimeoutMs', async () => {
    relay = await startRelay({
      limits: { queueDepth: 8, writeHighWaterBytes: 64 * 1024, writeTimeoutMs: 400, pingIntervalMs: 120_000 },
    });
    const a = startClient(relay);
    clients.push(a);
    await a.client.whenConnected(5000);
    const stuck = await rawClient(relay, true);
    relay.admitted.add(stuck.keyPair.publicKey.toString('base64'));
    await waitFor(() => stuck.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'stuck handshake');
    stuck.ws.pause();
    const bulk = Buffer.alloc(32 * 1024, 1);
    const stats = relay.derp.stats;
    // Sends until the relay gives up on the stuck socket (a turn's pause whenever the client is backed up).
    const push = async () => {
      if (stats.writeTimeouts === 0 && !a.client.send(stuck.keyPair.publicKey, bulk)) await sleep(1);
      return stats.writeTimeouts;
    };
    await pollUntil({
      what: 'a write timeout',
      read: push,
      until: (n) => n > 0,
      timeoutMs: 15_000,
      intervalMs: 0,
    });
    expect(relay.derp.stats.writeTimeouts).toBe(1);
    expect(relay.derp.isConnected(stuck.keyPair.publicKey)).toBe(false);
    expect(relay.derp.stats.dropped.queue_head).toBeGreaterThan(0);
    stuck.ws.terminate();
  });
});
