/**
 * The buffer rules of the packet path end to end (shared/net/buffers/received.ts, send-sink.ts): a hub and an
 * agent tunnel endpoint streaming both ways through the real TLS relay (the hub's in-process client, the
 * agent's WebSocket client), with every pool of both ARQs poisoning what is given back. A layer that gave
 * sent memory back before its socket wrote it, or that kept a view of memory someone recycled, would put
 * poison into the bytes. Both ends keep views of what they read (as the receive rule allows) and check them
 * at the end. A transport that breaks the rule (recycles its receive buffers) fails the same transfer.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../shared/clock.js';
import { generateKeyPair, generatePresharedKey } from '../shared/keys.js';
import { BufferPool, PoolBudget } from '../shared/net/buffers/buffer-pool.js';
import type { Received } from '../shared/net/buffers/received.js';
import { parseIpv4Address } from '../shared/net/ip/index.js';
import type { MuxStream } from '../shared/net/mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../shared/net/mux/open-target.js';
import { RelayedPath } from '../shared/net/tunnel-endpoint/relayed-path.js';
import { TunnelEndpoint } from '../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import { startClient, startRelay, type TestRelay } from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';
const POISON = 0xd7;
const BYTES = 3 * 1024 * 1024;
const sha = (parts: readonly Buffer[]): string => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** Pools by size on one budget, each poisoning every buffer given back. */
function poisoningPools() {
  const budget = new PoolBudget(64 * 1024 * 1024);
  const pools = new Map<number, BufferPool>();
  const of = (size: number): BufferPool => {
    let p = pools.get(size);
    if (!p) {
      p = new BufferPool(size, { budget, poison: POISON });
      pools.set(size, p);
    }
    return p;
  };
  const total = (key: 'kept' | 'refused'): number =>
    [...pools.values()].reduce((n, p) => n + p.stats[key], 0);
  return { of, total };
}

/**
 * Hub and agent joined through a real relay. `recycleAtAgent`: the agent's transport hands each datagram up
 * in a pooled buffer and gives it back (poisoned) once receive() returns, breaking the receive rule.
 */
async function tunnel(o: { recycleAtAgent: boolean }) {
  const relay: TestRelay = await startRelay();
  closers.push(() => relay.close());
  const pools = poisoningPools();
  const hubKeys = generateKeyPair();
  const agentKeys = generateKeyPair();
  const psk = generatePresharedKey();
  const keptAtAgent: Buffer[] = [];
  const hub = new TunnelEndpoint({
    privateKey: hubKeys.privateKey,
    address: parseIpv4Address(HUB),
    clock: realClock,
    streams: { role: 'client', arq: { pools: pools.of } },
    onPacket: () => {},
  });
  const agent = new TunnelEndpoint({
    privateKey: agentKeys.privateKey,
    address: parseIpv4Address(AGENT),
    clock: realClock,
    streams: {
      role: 'server',
      arq: { pools: pools.of },
      onStream: (s: MuxStream) => {
        readOpenRequest(s, { clock: realClock }).then(
          () => {
            replyOpen(s, OPEN_OK);
            s.on('data', (c: Buffer) => {
              keptAtAgent.push(c); // a view, kept: the receive rule allows it
              s.write(c);
            });
            s.on('end', () => s.end());
          },
          () => s.destroy(), // a garbled open request (the rule-breaking transport)
        );
      },
    },
    onPacket: () => {},
  });
  closers.push(
    () => hub.close(),
    () => agent.close(),
  );
  const recycled = new BufferPool(70_000, { budget: new PoolBudget(1 << 24), poison: POISON });
  const agentReceive = (payload: Received): void => {
    if (!o.recycleAtAgent) {
      agent.receive(payload, hubAtAgent.paths);
      return;
    }
    const b = recycled.take();
    payload.copy(b);
    agent.receive(b.subarray(0, payload.length), hubAtAgent.paths);
    recycled.give(b);
  };
  const local = relay.derp.connectLocal(hubKeys, {
    onPacket: (src, payload) => {
      if (src.equals(agentKeys.publicKey)) hub.receive(payload, agentAtHub.paths);
    },
  });
  closers.push(() => local.close());
  const ws = startClient(relay, { keyPair: agentKeys, onPacket: (_src, payload) => agentReceive(payload) });
  closers.push(() => ws.client.close());
  const agentAtHub = hub.addPeer({
    publicKey: agentKeys.publicKey,
    presharedKey: psk,
    address: AGENT,
    paths: [new RelayedPath(local, agentKeys.publicKey)],
  });
  const hubAtAgent = agent.addPeer({
    publicKey: hubKeys.publicKey,
    presharedKey: psk,
    address: HUB,
    paths: [new RelayedPath(ws.client, hubKeys.publicKey)],
  });
  await ws.client.whenConnected(10_000);
  return { hub, pools, keptAtAgent };
}

/** Sends `data` from the hub to the agent, which echoes it; resolves with what came back (views, kept). */
async function echo(
  t: Awaited<ReturnType<typeof tunnel>>,
  data: Buffer,
  timeoutMs: number,
): Promise<Buffer[]> {
  const s = await t.hub.streams.open(parseIpv4Address(AGENT), 'upstream.test:1');
  const back: Buffer[] = [];
  let ended = false;
  s.on('data', (c: Buffer) => back.push(c));
  s.on('end', () => {
    ended = true;
  });
  for (let off = 0; off < data.length; off += 100_000) s.write(data.subarray(off, off + 100_000));
  s.end();
  s.on('error', () => {});
  await waitFor(() => ended, timeoutMs, 'the echo to end');
  return back;
}

describe('pooled buffers poisoned on release, through the real relay', () => {
  it('a transfer both ways arrives intact in the views each end kept', async () => {
    const t = await tunnel({ recycleAtAgent: false });
    const data = randomBytes(BYTES);
    const back = await echo(t, data, 30_000);
    const want = sha([data]);
    expect(sha(t.keptAtAgent)).toBe(want);
    expect(sha(back)).toBe(want);
    expect(t.pools.total('kept')).toBeGreaterThan(0); // the pools were used, and given back to
    expect(t.pools.total('refused')).toBe(0);
  });

  it('a transport that recycles its receive buffers breaks the views the agent kept', async () => {
    const t = await tunnel({ recycleAtAgent: true });
    const data = randomBytes(BYTES);
    const want = sha([data]);
    const outcome = await echo(t, data, 5_000).then(
      (back) => (sha(back) === want && sha(t.keptAtAgent) === want ? 'intact' : 'corrupted'),
      () => 'failed',
    );
    expect(outcome).not.toBe('intact');
  });
});
