/**
 * The UDP transport on the GSO addon's socket, end to end on loopback: bursts leave in runs and arrive as
 * the datagrams that were sent, in order; a full socket buffer (EAGAIN, injected into the real send) makes
 * runs wait for the socket's writable event in order; a route that refuses GSO (EIO, injected) turns to one
 * datagram per send; an address the socket cannot reach is refused.
 */
import { constants } from 'node:os';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { BufferPool, handDown, isHandedDown, PoolBudget } from '../buffers/buffer-pool.js';
import { type SendSegments, type UdpGsoAddon, udpGso } from './udp-gso.js';
import { UdpTransport } from './udp-transport.js';

const LO = '127.0.0.1';
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

function realAddon(): UdpGsoAddon {
  const a = udpGso('on');
  if (a === null) throw new Error('the UDP GSO addon did not load: npm ci builds native/udp-gso');
  return a;
}

/** A sender and a receiver transport on loopback; `received` collects what the receiver is handed. */
async function pair(senderGso: UdpGsoAddon = realAddon()) {
  const sender = await UdpTransport.open({ host: LO, port: 0, gso: senderGso, maxQueuedSends: 256 });
  const receiver = await UdpTransport.open({ host: LO, port: 0, gso: realAddon() });
  closers.push(
    () => sender.close(),
    () => receiver.close(),
  );
  const received: Buffer[] = [];
  receiver.listen({ onWireGuard: (d) => received.push(Buffer.from(d)) });
  const until = async (n: number): Promise<void> => {
    const end = Date.now() + 5_000;
    while (received.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(received.length).toBe(n);
  };
  return { sender, receiver, received, until };
}

/** Datagrams of these sizes, each filled with its index (first byte 0x04-ish never a disco magic). */
const datagrams = (sizes: number[]): Buffer[] => sizes.map((n, i) => Buffer.alloc(n, (i % 250) + 1));

describe('UDP transport on the GSO socket', () => {
  it('sends a burst of full datagrams in a few runs, received as the datagrams sent', async () => {
    const p = await pair();
    const sent = datagrams([...Array<number>(100).fill(1_452), 200]);
    for (const d of sent) expect(p.sender.send(d, LO, p.receiver.port)).toBe(true);
    await p.until(sent.length);
    expect(p.received).toEqual(sent);
    expect(p.sender.gso?.datagrams).toBe(101);
    expect(p.sender.gso?.sends).toBe(3); // 44 + 44 + 13 (65,000 bytes at most per run)
  });

  it('property: any sizes sent in one job arrive intact and in order', async () => {
    const p = await pair();
    let expected = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 1_500 }), { minLength: 1, maxLength: 120 }),
        async (sizes) => {
          p.received.length = 0;
          const sent = datagrams(sizes);
          for (const d of sent) expect(p.sender.send(d, LO, p.receiver.port)).toBe(true);
          expected += sent.length;
          await p.until(sent.length);
          expect(p.received).toEqual(sent);
        },
      ),
      { numRuns: 40 },
    );
    expect(p.sender.gso?.datagrams).toBe(expected);
  });

  it('gives pooled datagrams back once a run is sent, bytes intact', async () => {
    const p = await pair();
    const pool = new BufferPool(1_500, { budget: new PoolBudget(1 << 20), poison: 0xee });
    const raws = Array.from({ length: 5 }, () => {
      const raw = pool.take();
      raw.fill(0x5a);
      handDown(pool, raw);
      return raw;
    });
    for (const raw of raws) expect(p.sender.send(raw.subarray(0, 1_400), LO, p.receiver.port)).toBe(true);
    await p.until(5);
    expect(p.received.every((d) => d.equals(Buffer.alloc(1_400, 0x5a)))).toBe(true);
    expect(raws.some((raw) => isHandedDown(raw))).toBe(false);
    expect(pool.freeCount).toBe(5);
  });

  it('a full socket buffer (EAGAIN) keeps runs in order until the socket is writable; beyond the cap send refuses', async () => {
    const real = realAddon();
    let refuseNext = 2;
    const flaky: SendSegments = (...args) =>
      refuseNext-- > 0 ? -constants.errno.EAGAIN : real.sendSegments(...args);
    const p = await pair({ ...real, sendSegments: flaky });
    const sent = datagrams(Array<number>(300).fill(1_000));
    const taken = sent.filter((d) => p.sender.send(d, LO, p.receiver.port));
    // the first run (64) fails and waits; the others queue behind it until 256 wait: the rest is refused
    expect(taken.length).toBeLessThan(sent.length);
    expect(p.sender.stats.refused).toBe(sent.length - taken.length);
    await p.until(taken.length);
    expect(p.received).toEqual(taken);
    expect(p.sender.gso?.waited).toBeGreaterThan(0);
    // and the path is open again
    expect(p.sender.send(Buffer.alloc(10, 7), LO, p.receiver.port)).toBe(true);
    await p.until(taken.length + 1);
  });

  it('a route that refuses GSO (EIO) gets one datagram per send from then on, nothing lost', async () => {
    const real = realAddon();
    const flaky: SendSegments = (fd, address, port, size, list) =>
      list.length > 1 ? -constants.errno.EIO : real.sendSegments(fd, address, port, size, list);
    const p = await pair({ ...real, sendSegments: flaky });
    const sent = datagrams(Array<number>(20).fill(1_200));
    for (const d of sent) expect(p.sender.send(d, LO, p.receiver.port)).toBe(true);
    await p.until(20);
    expect(p.received).toEqual(sent);
    expect(p.sender.gso?.off).toBe(true);
    expect(p.sender.gso?.sends).toBe(20);
  });

  it('refuses a destination the socket cannot send to, and counts a send the kernel refuses', async () => {
    const p = await pair();
    expect(p.sender.send(Buffer.alloc(10), '2001:db8::1', 9)).toBe(false);
    expect(p.sender.send(Buffer.alloc(10), 'not-an-address', 9)).toBe(false);
    expect(p.sender.stats.refused).toBe(2);
    // 255.255.255.255 without SO_BROADCAST: the kernel says EACCES
    expect(p.sender.send(Buffer.alloc(10), '255.255.255.255', 9)).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    expect(p.sender.stats.sendErrors).toBe(1);
  });
});
