/**
 * The bottom of the send path gives pooled memory back (shared/net/buffers/buffer-pool.ts): the WebSocket client after
 * its socket wrote the frame, or at once when it drops the packet; the relay after writing a frame built in
 * place from the hub's (in-process client's) packet, and when it drops one (policy, unknown destination,
 * queue overflow, destination gone). Real TLS relay and WebSocket clients on loopback. The test pools
 * poison what is given back, so memory given back before the socket wrote it would arrive corrupted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../../shared/keys.js';
import { BufferPool, handDown, isHandedDown, PoolBudget } from '../../../shared/net/buffers/buffer-pool.js';
import { grantRoom } from '../../../shared/net/buffers/packet-room.js';
import { SEND_PACKET_HEADROOM } from '../../../shared/net/derp/frames.js';
import { startClient, startRelay, type TestClient, type TestRelay } from '../../../test/derp-fixtures.js';
import { waitFor } from '../../../test/helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  await relay?.close();
  relay = undefined;
});

const SIZE = 20_000;
const HEAD = SEND_PACKET_HEADROOM + 24;

function testPool(): BufferPool {
  return new BufferPool(SIZE, { budget: new PoolBudget(1 << 24), poison: 0xee });
}

function payload(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

/** `plain` in a pooled buffer, granted room and handed down, as the ARQ's datagram writer does. */
function pooled(pool: BufferPool, plain: Buffer): Buffer {
  const raw = pool.take();
  const view = raw.subarray(HEAD, HEAD + plain.length);
  plain.copy(view);
  grantRoom(view, HEAD, SIZE - HEAD - plain.length);
  handDown(pool, raw);
  return view;
}

describe('pooled send buffers at the bottom of the send path', () => {
  it('the WebSocket client gives a frame built in place back only after the socket wrote it', async () => {
    relay = await startRelay();
    const a = startClient(relay);
    const b = startClient(relay);
    clients.push(a, b);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const pool = testPool();
    const plains = Array.from({ length: 20 }, (_, i) => payload(16_000 + i, i));
    const sent = plains.map((p) => pooled(pool, p));
    for (const v of sent) expect(a.client.send(b.keyPair.publicKey, v)).toBe(true);
    // Nothing is given back before the socket's write callback.
    expect(pool.freeCount).toBe(0);
    for (const v of sent) expect(isHandedDown(v)).toBe(true);
    await waitFor(() => b.received.length === plains.length, 5000, 'packets');
    await waitFor(() => pool.freeCount === plains.length, 5000, 'buffers given back');
    expect(b.received.map((r) => r.payload.toString('hex'))).toEqual(plains.map((p) => p.toString('hex')));
    expect(pool.stats.refused).toBe(0);
    // Reused: the next take is served from the free list.
    pool.take();
    expect(pool.stats.fresh).toBe(plains.length);
  });

  it('the WebSocket client gives a dropped packet back at once', async () => {
    relay = await startRelay();
    const a = startClient(relay);
    clients.push(a);
    const pool = testPool();
    const v = pooled(pool, payload(1000, 1));
    expect(a.client.send(generateKeyPair().publicKey, v)).toBe(false); // not connected yet
    expect(a.client.stats.dropped).toBe(1);
    expect(pool.freeCount).toBe(1);
    expect(isHandedDown(v)).toBe(false);
    // A plain payload is not the pool's business.
    expect(a.client.send(generateKeyPair().publicKey, payload(10, 2))).toBe(false);
    expect(pool.stats.refused).toBe(0);
  });

  it('the relay gives the hub’s frames back after writing them to an agent, and on drops', async () => {
    const blocked = generateKeyPair().publicKey;
    relay = await startRelay({ allow: (_s, d) => !d.equals(blocked) });
    const hub = generateKeyPair();
    const local = relay.derp.connectLocal(hub, {});
    const agent = startClient(relay);
    clients.push(agent);
    await agent.client.whenConnected(5000);
    const pool = testPool();
    const plains = Array.from({ length: 12 }, (_, i) => payload(12_000 + 3 * i, 50 + i));
    for (const p of plains) expect(local.send(agent.keyPair.publicKey, pooled(pool, p))).toBe(true);
    expect(pool.freeCount).toBe(0);
    await waitFor(() => agent.received.length === plains.length, 5000, 'packets to the agent');
    await waitFor(() => pool.freeCount === plains.length, 5000, 'buffers given back');
    expect(agent.received.map((r) => r.payload.toString('hex'))).toEqual(
      plains.map((p) => p.toString('hex')),
    );
    const stats = relay.derp.stats;
    // Unknown destination and policy refusals give back at once.
    expect(local.send(generateKeyPair().publicKey, pooled(pool, payload(100, 3)))).toBe(true);
    expect(stats.dropped.unknown_dest).toBe(1);
    expect(local.send(blocked, pooled(pool, payload(100, 4)))).toBe(true);
    expect(stats.dropped.policy).toBe(1);
    expect(pool.freeCount).toBe(plains.length);
    expect(pool.stats.kept).toBe(plains.length + 2);
    expect(pool.stats.refused).toBe(0);
    local.close();
  });

  it('a packet delivered to an in-process client is never given back (the handler may keep views)', async () => {
    relay = await startRelay();
    const kept: Buffer[] = [];
    const a = relay.derp.connectLocal(generateKeyPair(), {});
    const bKey = generateKeyPair();
    const b = relay.derp.connectLocal(bKey, { onPacket: (_s, p) => kept.push(p) });
    const pool = testPool();
    const plain = payload(5000, 9);
    expect(a.send(bKey.publicKey, pooled(pool, plain))).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(kept).toHaveLength(1);
    expect(pool.freeCount).toBe(0);
    expect(kept[0]!.equals(plain)).toBe(true);
    expect(isHandedDown(kept[0]!)).toBe(true);
    // Once closed, a packet for it is dropped and given back.
    b.close();
    expect(a.send(bKey.publicKey, pooled(pool, plain))).toBe(true);
    expect(pool.stats.kept).toBe(1);
    a.close();
    expect(a.send(bKey.publicKey, pooled(pool, plain))).toBe(false);
    expect(pool.stats.kept).toBe(2);
    expect(isHandedDown(kept[0]!)).toBe(true);
  });

  it('frames dropped from a backed-up agent’s queue, and those left when it leaves, are given back', async () => {
    relay = await startRelay({ limits: { writeHighWaterBytes: 0, queueDepth: 2 } });
    const hub = generateKeyPair();
    const local = relay.derp.connectLocal(hub, {});
    const agent = startClient(relay);
    clients.push(agent);
    await agent.client.whenConnected(5000);
    const pool = testPool();
    // With no write allowance every packet waits in the two-slot ring: the oldest ones are dropped.
    for (let i = 0; i < 5; i++)
      expect(local.send(agent.keyPair.publicKey, pooled(pool, payload(9000, i)))).toBe(true);
    expect(relay.derp.stats.dropped.queue_head).toBe(3);
    expect(pool.stats.kept).toBe(3);
    agent.client.close();
    await waitFor(() => relay!.derp.stats.dropped.gone_disconnected === 2, 5000, 'queue dropped on close');
    expect(pool.stats.kept).toBe(5);
    expect(pool.stats.refused).toBe(0);
    local.close();
  });
});
