import { createHash, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type FaultyLinkOptions, faultyPath } from '../../../test/helpers/faulty-path.js';
import { FakeClock } from '../../clock.js';
import { ArqSession } from '../arq/arq-session.js';
import type { MuxSession } from './mux-session.js';
import type { MuxStream } from './mux-stream.js';
import { muxOverArq } from './transport.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function stack(path: Omit<FaultyLinkOptions, 'clock'>, mtu = 1392, mux: { maxSessionGrowth?: number } = {}) {
  const clock = new FakeClock(0);
  const p = faultyPath(clock, path);
  const arqA = new ArqSession({ conv: 1, mtu, clock, output: p.ab.send });
  const arqB = new ArqSession({ conv: 1, mtu, clock, output: p.ba.send });
  p.ab.deliver = (d) => arqB.input(d);
  p.ba.deliver = (d) => arqA.input(d);
  const client = muxOverArq(arqA, { clock, role: 'client', keepAliveMs: 10_000, ...mux });
  const server = muxOverArq(arqB, { clock, role: 'server', keepAliveMs: 10_000, ...mux });
  return { clock, p, arqA, arqB, client, server };
}

/** Advances fake time in small steps, letting Node's stream machinery run in between. */
async function runUntil(clock: FakeClock, done: () => boolean, limitMs: number, step = 2): Promise<void> {
  const end = clock.now() + limitMs;
  while (!done() && clock.now() < end) {
    clock.advance(step);
    await new Promise((r) => setImmediate(r));
  }
}

function collect(s: Duplex): { buf: () => Buffer; ended: () => boolean } {
  const parts: Buffer[] = [];
  let ended = false;
  s.on('data', (c: Buffer) => parts.push(Buffer.from(c)));
  s.on('end', () => {
    ended = true;
  });
  return { buf: () => Buffer.concat(parts), ended: () => ended };
}

function pump(s: Duplex, data: Buffer, chunk: number): void {
  let off = 0;
  const go = (): void => {
    while (off < data.length) {
      const ok = s.write(data.subarray(off, off + chunk));
      off += chunk;
      if (!ok) {
        s.once('drain', go);
        return;
      }
    }
    s.end();
  };
  go();
}

function echoServer(server: MuxSession): void {
  server.on('stream', (s: MuxStream) => {
    s.on('error', () => {});
    s.pipe(s);
  });
}

describe('mux over ARQ over a faulty path', () => {
  it('keeps several concurrent streams intact through loss, reordering, duplication and a blackout', async () => {
    const { clock, p, client, server, arqA } = stack({
      seed: 21,
      loss: 0.05,
      reorder: 0.1,
      duplicate: 0.03,
      latencyMs: 10,
      jitterMs: 4,
    });
    echoServer(server);
    const sizes = [300_000, 150_000, 400_000, 80_000, 250_000];
    const jobs = sizes.map((n, i) => {
      const data = randomBytes(n);
      const s = client.open();
      const rx = collect(s);
      pump(s, data, 4_000 + i * 1_111);
      return { data, rx };
    });
    await runUntil(clock, () => jobs.every((j) => j.rx.buf().length > j.data.length / 3), 120_000);
    const t = clock.now();
    p.ab.addBlackout(t, t + 2_000);
    p.ba.addBlackout(t, t + 2_000);
    await runUntil(clock, () => jobs.every((j) => j.rx.ended()), 300_000);
    for (const j of jobs) expect(sha(j.rx.buf())).toBe(sha(j.data));
    expect(p.ab.counters.lost).toBeGreaterThan(0);
    expect(p.ab.counters.blackout + p.ba.counters.blackout).toBeGreaterThan(0);
    expect(arqA.closed).toBe(false);
    expect(client.closed).toBe(false);
  }, 60_000);

  async function slowAndFast(maxSessionGrowth?: number) {
    const { clock, client, server, arqB } = stack({ latencyMs: 5, seed: 4 }, 1392, { maxSessionGrowth });
    const inbound: MuxStream[] = [];
    server.on('stream', (s: MuxStream) => inbound.push(s));
    const slow = client.open();
    slow.write(randomBytes(3_000_000));
    await runUntil(clock, () => inbound.length === 1, 5_000);
    const slowIn = inbound[0]!;
    slowIn.pause();
    const fast = client.open();
    const data = randomBytes(2_000_000);
    pump(fast, data, 16_384);
    await runUntil(clock, () => inbound.length === 2, 5_000);
    const rx = collect(inbound[1]!);
    await runUntil(clock, () => rx.ended(), 120_000);
    expect(sha(rx.buf())).toBe(sha(data));
    expect(slowIn.queuedBytes + slowIn.readableLength).toBeLessThanOrEqual(slowIn.recvWindow + 128 * 1024);
    expect(slowIn.recvWindow).toBe(256 * 1024);
    expect(arqB.recvHeldBytes).toBe(0);
    return { fastWindow: inbound[1]!.recvWindow, rtt: client.rttMs };
  }

  it('completes a fast stream while another stream is never read (bounded memory at the slow end)', async () => {
    const { fastWindow, rtt } = await slowAndFast();
    expect(rtt).toBeGreaterThanOrEqual(10);
    // The fast reader's window was auto-tuned upwards; the stalled one stayed at 256 KiB.
    expect(fastWindow).toBeGreaterThan(256 * 1024);
  }, 60_000);

  it('stops window auto-tuning at the session growth budget', async () => {
    const { fastWindow } = await slowAndFast(0);
    expect(fastWindow).toBe(256 * 1024);
  }, 60_000);

  it('survives an MTU change from the relay size to the UDP size mid-transfer', async () => {
    const { clock, p, client, server, arqA, arqB } = stack({ latencyMs: 8, seed: 8, loss: 0.01 }, 65_000);
    echoServer(server);
    const data = randomBytes(3_000_000);
    const s = client.open();
    const rx = collect(s);
    pump(s, data, 64 * 1024);
    await runUntil(clock, () => rx.buf().length > 500_000 && arqA.inFlight > 0, 60_000, 1);
    for (const l of [p.ab, p.ba]) l.opts.mtu = 1392;
    arqA.setMtu(1392);
    arqB.setMtu(1392);
    // The switch loses the ACKs of a moment: the segments in flight at the old size are re-sent in pieces.
    p.ba.addBlackout(clock.now(), clock.now() + 2_000);
    await runUntil(clock, () => rx.ended(), 300_000);
    expect(sha(rx.buf())).toBe(sha(data));
    expect(p.ab.counters.tooBig + p.ba.counters.tooBig).toBe(0);
    expect(arqA.stats.fragmentedSends + arqB.stats.fragmentedSends).toBeGreaterThan(0);
  }, 60_000);

  it('delivers every stream intact for random path faults, MTUs and stream sizes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.nat(),
          loss: fc.double({ min: 0, max: 0.1, noNaN: true }),
          reorder: fc.double({ min: 0, max: 0.3, noNaN: true }),
          duplicate: fc.double({ min: 0, max: 0.1, noNaN: true }),
          latencyMs: fc.integer({ min: 1, max: 30 }),
          jitterMs: fc.integer({ min: 0, max: 10 }),
        }),
        fc.constantFrom(200, 576, 1392, 9000, 65_000),
        fc.array(fc.integer({ min: 0, max: 120_000 }), { minLength: 1, maxLength: 4 }),
        async (path, mtu, sizes) => {
          const { clock, client, server, arqA } = stack(path, mtu);
          echoServer(server);
          const jobs = sizes.map((n, i) => {
            const data = randomBytes(n);
            const s = client.open();
            const rx = collect(s);
            pump(s, data, 1 + ((n * 7 + i * 1_013) % 20_000));
            return { data, rx };
          });
          await runUntil(clock, () => jobs.every((j) => j.rx.ended()), 300_000, 5);
          for (const j of jobs) expect(sha(j.rx.buf())).toBe(sha(j.data));
          expect(arqA.closed).toBe(false);
          client.close();
          server.close();
        },
      ),
      { numRuns: 20 },
    );
  }, 120_000);
});
