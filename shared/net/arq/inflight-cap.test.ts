import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pumpInto } from '../../../test/helpers/faulty-path.js';
import { type Clock, FakeClock } from '../../clock.js';
import { ArqSession } from './arq-session.js';
import { InflightCap } from './inflight-cap.js';

/**
 * A one-way bottleneck that queues instead of dropping (like the relay's TCP): datagrams leave one after
 * another at `bytesPerMs`, then take `latencyMs`. Records how long each one waited in the queue.
 */
class Bottleneck {
  deliver: (d: Buffer) => void = () => {};
  readonly waits: number[] = [];
  /** When each datagram was handed over (its wait is at the same index). */
  readonly sentAt: number[] = [];
  sentBytes = 0;
  #freeAt = 0;
  constructor(
    readonly clock: Clock,
    readonly bytesPerMs: number,
    readonly latencyMs: number,
  ) {}
  send = (d: Buffer): void => {
    const now = this.clock.now();
    const start = Math.max(now, this.#freeAt);
    this.waits.push(start - now);
    this.sentAt.push(now);
    this.sentBytes += d.length;
    this.#freeAt = start + d.length / this.bytesPerMs;
    this.clock.setTimer(this.#freeAt + this.latencyMs - now, () => this.deliver(d));
  };
}

function transfer(queueTargetMs: number, bytes: number, latencyMs = 1) {
  const clock = new FakeClock(0);
  const ab = new Bottleneck(clock, 50_000, latencyMs); // 50 MB/s
  const ba = new Bottleneck(clock, 50_000, latencyMs);
  const opts = {
    conv: 9,
    mtu: 65_475,
    clock,
    ackEvery: 1,
    queueTargetMs,
    sendWindow: 4096,
    recvWindow: 4096,
  };
  const a = new ArqSession({ ...opts, output: ab.send });
  const b = new ArqSession({ ...opts, output: ba.send });
  ab.deliver = (d) => b.input(d);
  ba.deliver = (d) => a.input(d);
  let got = 0;
  let doneAt = -1;
  b.on('data', (d: Buffer) => {
    got += d.length;
    if (got === bytes) doneAt = clock.now();
  });
  pumpInto(a, randomBytes(bytes), 64 * 1024);
  while (doneAt < 0 && clock.now() < 60_000) clock.advance(1);
  const waits = ab.waits.slice(ab.waits.length / 2); // steady state
  waits.sort((x, y) => x - y);
  return { a, doneAt, p99Wait: waits[Math.floor(waits.length * 0.99)] ?? 0 };
}

describe('InflightCap', () => {
  it('is off (Infinity) when the target is 0, whatever it is fed', () => {
    const c = new InflightCap(0, 1000);
    c.onRttSample(5, 0);
    for (let i = 0; i < 10; i++) c.onAdvance(i, i + 1, i * 1000, i);
    expect(c.enabled).toBe(false);
    expect(c.bytes).toBe(Number.POSITIVE_INFINITY);
  });

  it('caps at rate x (2 x minRtt + target), never below the floor, and keeps the min RTT of 5-10 s', () => {
    const c = new InflightCap(4, 10_000);
    expect(c.bytes).toBe(Number.POSITIVE_INFINITY); // nothing measured yet
    c.onRttSample(3, 0);
    c.onRttSample(1, 1);
    c.onRttSample(2, 2);
    expect(c.minRtt).toBe(1);
    // One round per 2 ms, 100 kB acknowledged per round: 50 kB/ms.
    for (let r = 0; r <= 6; r++) c.onAdvance(r, r + 1, r * 100_000, r * 2);
    expect(c.rate).toBeCloseTo(50_000, 5);
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 1 + 4), 5);
    // A slow phase: the average over the last rounds falls, the cap follows, down to the floor.
    for (let r = 7; r <= 14; r++) c.onAdvance(r, r + 1, 600_000 + (r - 6) * 100, r * 2);
    expect(c.bytes).toBe(10_000);
    // The minimum RTT sample ages out after two buckets (5-10 s).
    c.onRttSample(2.5, 6_000);
    c.onRttSample(2.5, 11_000);
    expect(c.minRtt).toBe(2.5);
  });

  it('drains after a bucket whose min RTT stood above the one before: one segment at a time for two RTTs, then the cap from the old rate', () => {
    const c = new InflightCap(1, 10_000);
    c.onRttSample(1, 0);
    for (let r = 0; r <= 6; r++) c.onAdvance(r, r + 1, r * 100_000, r * 2); // 50 kB/ms
    expect(c.bytes).toBeCloseTo(50_000 * 3, 5);
    // The bucket from 5 s holds only samples under a standing queue: 3 ms against 1 ms before.
    c.onRttSample(3, 5_000);
    expect(c.draining(5_000)).toBe(false); // the bucket that ended (from 0 s) had the path's minimum
    // It ends at 10 s: the drain, 2 x 3 ms.
    c.onRttSample(3, 10_000);
    expect(c.draining(10_000)).toBe(true);
    expect(c.bytes).toBe(1);
    c.onAdvance(7, 8, 700_000, 10_003); // acks during the drain are not rate samples
    expect(c.bytes).toBe(1);
    c.onRttSample(0.5, 10_004); // the path without its queue
    expect(c.draining(10_006)).toBe(false);
    c.onAdvance(8, 9, 701_000, 10_006);
    expect(c.rate).toBeCloseTo(50_000, 5);
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 0.5 + 1), 5);
  });

  it("never drains a flow whose min RTT stays at the path's", () => {
    const c = new InflightCap(1, 10_000);
    c.onRttSample(25, 0);
    for (let r = 0; r <= 6; r++) c.onAdvance(r, r + 1, r * 100_000, r * 50);
    expect(Number.isFinite(c.bytes)).toBe(true);
    for (let t = 1_000; t <= 60_000; t += 250) {
      // A 25 ms path: each 5 s bucket's minimum 25 or 25.4 ms, within queueTargetMs / 2 of the one before.
      const floor = Math.floor(t / 5_000) % 2 === 0 ? 25 : 25.4;
      c.onRttSample(floor + (t % 1_000) / 1_000, t);
      expect(c.draining(t)).toBe(false);
    }
    expect(c.bytes).toBeGreaterThan(1);
  });

  it('takes a new target at once: the cap from the samples so far, off at 0, on again with them', () => {
    const c = new InflightCap(1, 1_000);
    c.onRttSample(0.25, 0);
    for (let r = 0; r <= 6; r++) c.onAdvance(r, r + 1, r * 100_000, r * 2); // 50 kB/ms
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 0.25 + 1), 5);
    c.setTarget(0.5);
    expect(c.targetMs).toBe(0.5);
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 0.25 + 0.5), 5);
    c.setTarget(0);
    expect(c.bytes).toBe(Number.POSITIVE_INFINITY);
    c.setTarget(2);
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 0.25 + 2), 5);
  });

  it('keeps a drain that is under way when the target changes', () => {
    const c = new InflightCap(1, 1_000);
    c.onRttSample(1, 0);
    for (let r = 0; r <= 6; r++) c.onAdvance(r, r + 1, r * 100_000, r * 2);
    c.onRttSample(3, 5_000);
    c.onRttSample(3, 10_000);
    expect(c.draining(10_000)).toBe(true);
    c.setTarget(0.5);
    expect(c.bytes).toBe(1);
    c.onAdvance(8, 9, 701_000, 10_006);
    expect(c.bytes).toBeCloseTo(50_000 * (2 * 3 + 0.5), 5); // the new bucket's minimum is 3 ms
  });

  it('a round ends only when the cumulative ack passes the sn that was next when it began', () => {
    const c = new InflightCap(4, 0);
    c.onRttSample(1, 0);
    c.onAdvance(0, 10, 0, 0); // round 1 runs until una reaches 10
    c.onAdvance(5, 12, 50_000, 1);
    c.onAdvance(9, 12, 90_000, 2);
    expect(c.rate).toBe(0);
    c.onAdvance(10, 20, 100_000, 3); // round 2 begins
    c.onAdvance(20, 30, 200_000, 5); // round 3 begins: two rounds measured
    expect(c.rate).toBeCloseTo(200_000 / 5, 5);
  });
});

describe('ArqSession with queueTargetMs over a path that queues', () => {
  it('keeps the queue near the target and still fills the path', () => {
    const bytes = 40 * 1024 * 1024;
    const capped = transfer(4, bytes);
    expect(capped.doneAt).toBeGreaterThan(0);
    // 40 MiB at 50 MB/s is 839 ms: the cap costs little throughput...
    expect(capped.doneAt).toBeLessThan(1_000);
    // ...and datagrams wait about the target (2 x 1 ms min RTT... + 4 ms), not the whole window.
    expect(capped.p99Wait).toBeLessThan(12);
    expect(Number.isFinite(capped.a.inflightCap)).toBe(true);

    // Without the cap the loss-free path lets the window grow and the queue with it.
    const loose = transfer(0, bytes);
    expect(loose.doneAt).toBeGreaterThan(0);
    expect(loose.p99Wait).toBeGreaterThan(3 * capped.p99Wait);
  });
});

/**
 * Two sessions over 50 MB/s bottlenecks (0.2 ms each way), a bulk transfer from a to b written until `endMs`
 * (the clock is advanced by the caller).
 */
function bulkOverBottleneck(o: { mtu: number; queueTargetMs: number; endMs: number }) {
  const clock = new FakeClock(0);
  const ab = new Bottleneck(clock, 50_000, 0.2);
  const ba = new Bottleneck(clock, 50_000, 0.2);
  const opts = { conv: 9, mtu: o.mtu, clock, ackEvery: 1, queueTargetMs: o.queueTargetMs };
  const a = new ArqSession({ ...opts, sendWindow: 4096, recvWindow: 4096, output: ab.send });
  const b = new ArqSession({ ...opts, sendWindow: 4096, recvWindow: 4096, output: ba.send });
  ab.deliver = (d) => b.input(d);
  ba.deliver = (d) => a.input(d);
  b.on('data', () => {});
  const chunk = Buffer.alloc(64 * 1024, 7);
  const pump = (): void => {
    while (clock.now() < o.endMs && a.write(chunk)) {}
    if (clock.now() < o.endMs) a.once('drain', pump);
  };
  pump();
  /** Median wait in the a -> b queue of the datagrams handed over in [from, to). */
  const p50Wait = (from: number, to: number): number => {
    const w = ab.waits.filter((_, i) => (ab.sentAt[i] ?? -1) >= from && (ab.sentAt[i] ?? -1) < to);
    return w.sort((x, y) => x - y)[Math.floor(w.length / 2)] ?? Number.NaN;
  };
  return { clock, a, b, ab, p50Wait };
}

describe('ArqSession.setQueueTarget', () => {
  it('moves the queue a bulk transfer holds, mid-transfer, and refuses a bad target', () => {
    // 8 KB datagrams: the floor of 4 segments (0.65 ms at 50 MB/s) stays below both targets.
    const { clock, a, b, p50Wait } = bulkOverBottleneck({ mtu: 8_192, queueTargetMs: 4, endMs: 4_000 });
    while (clock.now() < 2_000) clock.advance(1);
    a.setQueueTarget(1);
    while (clock.now() < 4_000) clock.advance(1);
    const wide = p50Wait(1_000, 2_000);
    const narrow = p50Wait(3_000, 4_000);
    expect(wide).toBeGreaterThan(3);
    expect(narrow).toBeLessThan(wide / 2);
    expect(a.queueTargetMs).toBe(1);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => a.setQueueTarget(bad)).toThrow(expect.objectContaining({ code: 'BAD_CONFIG' }));
    }
    expect(a.queueTargetMs).toBe(1);
    a.close();
    b.close();
  });
});

describe('ArqSession with queueTargetMs over a long transfer', () => {
  it('holds the queue where it settled for 30 s: the drains keep the min RTT from creeping up', () => {
    const END = 30_000;
    const { clock, ab, p50Wait } = bulkOverBottleneck({ mtu: 65_475, queueTargetMs: 1, endMs: END });
    while (clock.now() < END) clock.advance(1);
    const settled = p50Wait(5_000, 10_000);
    // Without the drains the min RTT doubled with each bucket: 3.5 ms of queue, 10, 23, 49 by 30 s.
    expect(settled).toBeLessThan(5);
    expect(p50Wait(25_000, 30_000)).toBeLessThanOrEqual(settled * 1.1);
    // The path stays full: 50 MB/s less the drains (under 1 %).
    expect(ab.sentBytes / END).toBeGreaterThan(50_000 * 0.98);
  });
});

describe('ArqSession with queueTargetMs over a long path', () => {
  it('still fills a path whose bandwidth-delay product is far above the floor (25 ms each way)', () => {
    const bytes = 40 * 1024 * 1024;
    const capped = transfer(4, bytes, 25);
    const loose = transfer(0, bytes, 25);
    expect(capped.doneAt).toBeGreaterThan(0);
    expect(loose.doneAt).toBeGreaterThan(0);
    // The cap tracks rate x RTT, so it does not throttle a long path (BDP 2.5 MB against a 256 KiB floor).
    expect(capped.doneAt).toBeLessThan(loose.doneAt * 1.15);
    expect(Number.isFinite(capped.a.inflightCap)).toBe(true);
    expect(capped.a.inflightCap).toBeGreaterThan(2 * 1024 * 1024);
  });
});

describe('ArqSession notSentLowWater', () => {
  it('write() turns false once unsent bytes pass the mark, far below sendHighWater, and drains', () => {
    const clock = new FakeClock(0);
    const b = new Bottleneck(clock, 1_000, 1);
    const a = new ArqSession({
      conv: 1,
      mtu: 1392,
      clock,
      output: b.send,
      notSentLowWater: 16 * 1024,
      initialCwnd: 2,
    });
    const peer = new ArqSession({ conv: 1, mtu: 1392, clock, output: (d) => a.input(d) });
    b.deliver = (d) => peer.input(d);
    let drains = 0;
    a.on('drain', () => drains++);
    let ok = true;
    let written = 0;
    while (ok) {
      ok = a.write(Buffer.alloc(4096));
      written += 4096;
    }
    expect(written).toBeLessThan(64 * 1024);
    expect(a.notSentBytes).toBeGreaterThan(16 * 1024);
    expect(a.bufferedBytes).toBeLessThan(1024 * 1024);
    for (let i = 0; i < 200 && drains === 0; i++) clock.advance(5);
    expect(drains).toBe(1);
    expect(a.notSentBytes).toBeLessThanOrEqual(16 * 1024);
  });
});
