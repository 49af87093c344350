import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { BufferPool, handDown, isHandedDown, PoolBudget } from '../buffers/buffer-pool.js';
import { udpGso } from './udp-gso.js';
import { UdpTransport } from './udp-transport.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

async function receiver(): Promise<{ port: number; next: () => Promise<Buffer> }> {
  const rx = createSocket('udp4');
  rx.bind(0, '127.0.0.1');
  await once(rx, 'listening');
  closers.push(() => new Promise<void>((r) => rx.close(() => r())));
  return {
    port: rx.address().port,
    next: async () => ((await once(rx, 'message')) as [Buffer])[0],
  };
}

const socketKinds = [
  { kind: 'the GSO addon', gso: udpGso('on') },
  { kind: 'node:dgram', gso: null },
];

describe.each(socketKinds)('UdpTransport on $kind and pooled datagrams', ({ kind, gso }) => {
  it('runs on the socket it was asked for', async () => {
    const udp = await UdpTransport.open({ host: '127.0.0.1', port: 0, gso });
    closers.push(() => udp.close());
    expect(udp.gso === null).toBe(kind === 'node:dgram');
  });

  it('gives a handed-down datagram back to its pool once sent, bytes intact', async () => {
    const rx = await receiver();
    const udp = await UdpTransport.open({ host: '127.0.0.1', port: 0, gso });
    closers.push(() => udp.close());
    // Poisoned on release: a datagram given back before the kernel had its bytes would arrive as 0xee.
    const pool = new BufferPool(1_500, { budget: new PoolBudget(1 << 20), poison: 0xee });
    const raw = pool.take();
    raw.fill(0x5a);
    handDown(pool, raw);
    const datagram = raw.subarray(40, 1_440); // a view grown in place by the layers above
    const got = rx.next();
    expect(udp.send(datagram, '127.0.0.1', rx.port)).toBe(true);
    expect((await got).equals(Buffer.alloc(1_400, 0x5a))).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(isHandedDown(raw)).toBe(false);
    expect(pool.freeCount).toBe(1);
    expect(pool.stats.refused).toBe(0);
  });

  it('leaves a datagram that was not handed down alone', async () => {
    const rx = await receiver();
    const udp = await UdpTransport.open({ host: '127.0.0.1', port: 0, gso });
    closers.push(() => udp.close());
    const pool = new BufferPool(1_500, { budget: new PoolBudget(1 << 20) });
    const owned = pool.take();
    owned.fill(1);
    const got = rx.next();
    expect(udp.send(owned.subarray(0, 100), '127.0.0.1', rx.port)).toBe(true);
    await got;
    await new Promise((r) => setImmediate(r));
    expect(pool.owns(owned)).toBe(true);
    expect(pool.freeCount).toBe(0);
  });
});
