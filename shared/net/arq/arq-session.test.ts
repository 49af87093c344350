import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type FaultyLinkOptions, faultyPath, pumpInto } from '../../../test/helpers/faulty-path.js';
import { FakeClock } from '../../clock.js';
import { isTunnelError, type TunnelError } from '../../errors.js';
import type { ArqOptions } from './arq-options.js';
import { ArqSession } from './arq-session.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function setup(
  path: Omit<FaultyLinkOptions, 'clock'>,
  arq: Partial<ArqOptions> = {},
): { clock: FakeClock; a: ArqSession; b: ArqSession; p: ReturnType<typeof faultyPath> } {
  const clock = new FakeClock(0);
  const p = faultyPath(clock, path);
  const a = new ArqSession({ conv: 7, mtu: 1392, clock, output: p.ab.send, ...arq });
  const b = new ArqSession({ conv: 7, mtu: 1392, clock, output: p.ba.send, ...arq });
  p.ab.deliver = (d) => b.input(d);
  p.ba.deliver = (d) => a.input(d);
  return { clock, a, b, p };
}

function collect(s: ArqSession): { bytes: () => Buffer; length: () => number } {
  const got: Buffer[] = [];
  let n = 0;
  s.on('data', (d: Buffer) => {
    got.push(Buffer.from(d));
    n += d.length;
  });
  return { bytes: () => Buffer.concat(got), length: () => n };
}

function runUntil(clock: FakeClock, done: () => boolean, limitMs: number, step = 5): void {
  const end = clock.now() + limitMs;
  while (!done() && clock.now() < end) clock.advance(step);
}

describe('ArqSession over a faulty path', () => {
  it('delivers bytes in order over a clean path, then goes idle with no timers', () => {
    const { clock, a, b, p } = setup({ latencyMs: 10 });
    const data = randomBytes(1_000_000);
    const rx = collect(b);
    pumpInto(a, data, 10_000);
    runUntil(clock, () => rx.length() >= data.length, 60_000);
    expect(sha(rx.bytes())).toBe(sha(data));
    clock.advance(10_000);
    expect(a.bufferedBytes).toBe(0);
    expect(a.stats.retransmitsTimeout).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(p.ab.counters.sent).toBeGreaterThan(data.length / 1368);
    expect(a.srttMs).toBeGreaterThanOrEqual(20);
  });

  it('survives 5% loss, reordering and duplication in both directions', () => {
    const { clock, a, b, p } = setup({
      seed: 42,
      loss: 0.05,
      reorder: 0.1,
      duplicate: 0.05,
      latencyMs: 10,
      jitterMs: 5,
    });
    const data = randomBytes(2_000_000);
    const back = randomBytes(300_000);
    const rxB = collect(b);
    const rxA = collect(a);
    pumpInto(a, data, 7_000);
    pumpInto(b, back, 5_000);
    runUntil(clock, () => rxB.length() >= data.length && rxA.length() >= back.length, 600_000);
    expect(sha(rxB.bytes())).toBe(sha(data));
    expect(sha(rxA.bytes())).toBe(sha(back));
    expect(p.ab.counters.lost).toBeGreaterThan(50);
    expect(p.ab.counters.duplicated).toBeGreaterThan(20);
    expect(a.stats.retransmitsFast + a.stats.retransmitsTimeout).toBeGreaterThan(0);
    expect(b.stats.dropped.duplicate).toBeGreaterThan(0);
  });

  it('crosses the u32 sequence-number wrap under loss and reordering', () => {
    const { clock, a, b } = setup(
      { latencyMs: 10, loss: 0.05, reorder: 0.2, seed: 77 },
      { initialSn: 0xffffffff - 300 },
    );
    const data = randomBytes(1_500_000);
    const rx = collect(b);
    pumpInto(a, data, 9_000);
    runUntil(clock, () => rx.length() >= data.length, 120_000);
    expect(sha(rx.bytes())).toBe(sha(data));
    expect(a.stats.segmentsSent).toBeGreaterThan(1_100);
  });

  it('survives a 2-second blackout mid-transfer', () => {
    const { clock, a, b, p } = setup({ latencyMs: 15, seed: 3 });
    const data = randomBytes(3_000_000);
    const rx = collect(b);
    let closed = false;
    a.on('close', () => {
      closed = true;
    });
    pumpInto(a, data, 16_384);
    runUntil(clock, () => rx.length() > 1_000_000, 60_000);
    expect(rx.length()).toBeLessThan(data.length);
    const t = clock.now();
    p.ab.addBlackout(t, t + 2_000);
    p.ba.addBlackout(t, t + 2_000);
    clock.advance(1_990);
    // While the path is dark, timeouts resend only a couple of segments per backed-off RTO, not the window.
    const inFlight = a.inFlight;
    expect(inFlight).toBeGreaterThan(100);
    expect(a.stats.retransmitsTimeout).toBeLessThanOrEqual(12);
    runUntil(clock, () => rx.length() >= data.length, 120_000);
    expect(clock.now() - t).toBeLessThan(10_000);
    expect(a.stats.retransmitsTimeout).toBeGreaterThanOrEqual(inFlight);
    expect(sha(rx.bytes())).toBe(sha(data));
    expect(p.ab.counters.blackout).toBeGreaterThan(0);
    expect(a.stats.retransmitsTimeout).toBeGreaterThan(0);
    expect(closed).toBe(false);
  });

  it("emits 'silent' once when a blackout starves its resends of answers, and not on a path that loses some", () => {
    const lossy = setup({ latencyMs: 15, seed: 5, loss: 0.05 });
    const lossyRx = collect(lossy.b);
    const some = randomBytes(1_000_000);
    pumpInto(lossy.a, some, 16_384);
    runUntil(lossy.clock, () => lossyRx.length() >= some.length, 60_000);
    expect(lossy.a.stats.retransmitsTimeout + lossy.a.stats.retransmitsFast).toBeGreaterThan(0);
    expect(lossy.a.stats.silences).toBe(0);

    const { clock, a, b, p } = setup({ latencyMs: 15, seed: 3 });
    const data = randomBytes(3_000_000);
    const rx = collect(b);
    const silentAt: number[] = [];
    a.on('silent', () => silentAt.push(clock.now()));
    pumpInto(a, data, 16_384);
    runUntil(clock, () => rx.length() > 1_000_000, 60_000);
    expect(silentAt).toEqual([]);
    const t = clock.now();
    p.ab.addBlackout(t, t + 2_000);
    p.ba.addBlackout(t, t + 2_000);
    clock.advance(1_990);
    expect(silentAt.length).toBe(1);
    // Within a few RTTs (RTT 30 ms; the first resend is due an RTO after the oldest unanswered send).
    expect((silentAt[0] ?? Number.POSITIVE_INFINITY) - t).toBeLessThanOrEqual(a.rtoMs + 60);
    runUntil(clock, () => rx.length() >= data.length, 120_000);
    expect(sha(rx.bytes())).toBe(sha(data));
    expect(a.stats.silences).toBe(1);
  });

  it('survives MTU changes mid-transfer (in-flight segments larger than the new MTU are fragmented)', () => {
    const { clock, a, b, p } = setup({ latencyMs: 10, seed: 9, loss: 0.02 }, { mtu: 65_000 });
    const data = randomBytes(6_000_000);
    const rx = collect(b);
    pumpInto(a, data, 100_000);
    runUntil(clock, () => rx.length() > 1_500_000, 60_000, 1);
    // The path now only carries 1392-byte datagrams: everything already in flight at 65,000 must be re-cut.
    p.ab.opts.mtu = 1392;
    p.ba.opts.mtu = 1392;
    a.setMtu(1392);
    b.setMtu(1392);
    runUntil(clock, () => rx.length() > 4_000_000, 300_000);
    expect(a.stats.segmentsSent).toBeGreaterThan(0);
    p.ab.opts.mtu = 9000;
    p.ba.opts.mtu = 9000;
    a.setMtu(9000);
    runUntil(clock, () => rx.length() >= data.length, 300_000);
    expect(sha(rx.bytes())).toBe(sha(data));
    expect(a.stats.fragmentedSends).toBeGreaterThan(0);
    expect(p.ab.counters.tooBig).toBe(0);
  });

  it('probes a zero window while the reader is paused and resumes when it reads again', () => {
    const { clock, a, b } = setup({ latencyMs: 5 }, { recvWindow: 64, sendWindow: 64 });
    const data = randomBytes(400_000);
    b.pause();
    const rx = collect(b);
    pumpInto(a, data, 8_192);
    clock.advance(5_000);
    expect(rx.length()).toBe(0);
    expect(a.stats.probesSent).toBeGreaterThan(0);
    expect(a.closed).toBe(false);
    b.resume();
    // The held window is delivered at once; a WINS reopens the sender well before its next probe is due.
    expect(rx.length()).toBeLessThanOrEqual(64 * 1368);
    clock.advance(100);
    expect(rx.length()).toBeGreaterThan(64 * 1368);
    runUntil(clock, () => rx.length() >= data.length, 60_000);
    expect(sha(rx.bytes())).toBe(sha(data));
  });

  it('reports write() === false over the high-water mark and emits drain once acknowledged', () => {
    const { clock, a, b } = setup({ latencyMs: 5 }, { sendHighWater: 100_000 });
    collect(b);
    expect(a.write(randomBytes(60_000))).toBe(true);
    expect(a.write(randomBytes(60_000))).toBe(false);
    let drained = false;
    a.once('drain', () => {
      drained = true;
    });
    runUntil(clock, () => drained, 10_000);
    expect(drained).toBe(true);
    expect(a.bufferedBytes).toBeLessThanOrEqual(100_000);
  });

  it('declares a dead link after deadLinkMs with a TIMEOUT error', () => {
    const { clock, a, p } = setup({ latencyMs: 5 }, { deadLinkMs: 3_000 });
    p.ab.deliver = () => {};
    const errors: TunnelError[] = [];
    a.on('error', (e: TunnelError) => errors.push(e));
    a.write(randomBytes(10_000));
    clock.advance(2_500);
    expect(a.closed).toBe(false);
    clock.advance(5_000);
    expect(a.closed).toBe(true);
    expect(errors).toHaveLength(1);
    expect(isTunnelError(errors[0], 'TIMEOUT')).toBe(true);
    expect(clock.pendingTimers).toBeLessThanOrEqual(1); // at most the link's own delivery timer
  });

  it('does not count an idle period against the dead-link timer', () => {
    const { clock, a, b } = setup({ latencyMs: 5 }, { deadLinkMs: 1_000 });
    const rx = collect(b);
    clock.advance(60_000);
    a.write(Buffer.from('hello after a long idle'));
    runUntil(clock, () => rx.length() > 0, 1_000);
    expect(a.closed).toBe(false);
    expect(rx.bytes().toString()).toBe('hello after a long idle');
  });

  it('end() closes once everything is acknowledged', () => {
    const { clock, a, b } = setup({ latencyMs: 5, loss: 0.1, seed: 5 });
    const rx = collect(b);
    a.write(randomBytes(50_000));
    a.end();
    expect(() => a.write(Buffer.alloc(1))).toThrow();
    runUntil(clock, () => a.closed, 30_000);
    expect(a.closed).toBe(true);
    expect(rx.length()).toBe(50_000);
  });

  it('works over a synchronous link where output() re-enters the peer and then this session', () => {
    const clock = new FakeClock(0);
    let b: ArqSession | undefined;
    const a = new ArqSession({ conv: 2, mtu: 1392, clock, output: (d) => b!.input(d) });
    b = new ArqSession({ conv: 2, mtu: 1392, clock, output: (d) => a.input(d) });
    const rx = collect(b);
    const back = collect(a);
    const data = randomBytes(500_000);
    pumpInto(a, data, 20_000);
    b.write(Buffer.from('reply'));
    runUntil(clock, () => rx.length() >= data.length && back.length() >= 5, 10_000, 1);
    expect(sha(rx.bytes())).toBe(sha(data));
    expect(back.bytes().toString()).toBe('reply');
    expect(a.stats.dropped.reentrant + b.stats.dropped.reentrant).toBe(0);
  });

  it('closes with CLOSED when the peer restarts its session (same conv, new incarnation tag)', () => {
    const { clock, a, b, p } = setup({ latencyMs: 5 }, { incarnation: 1 });
    const rx = collect(b);
    a.write(randomBytes(50_000));
    runUntil(clock, () => rx.length() >= 50_000, 10_000);
    expect(a.closed).toBe(false);
    // b's process restarts: a new session object with the same conv but another tag takes over b's end.
    b.close();
    const b2 = new ArqSession({ conv: 7, mtu: 1392, clock, output: p.ba.send, incarnation: 2 });
    p.ab.deliver = (d) => b2.input(d);
    const errors: TunnelError[] = [];
    a.on('error', (e: TunnelError) => errors.push(e));
    b2.write(Buffer.from('hello from the new incarnation'));
    a.write(randomBytes(1_000));
    runUntil(clock, () => a.closed, 5_000);
    expect(a.closed).toBe(true);
    expect(isTunnelError(errors[0], 'CLOSED')).toBe(true);
    expect(errors[0]!.message).toMatch(/restarted/);
    // The fresh side adopted a's tag on first contact and stays open.
    expect(b2.closed).toBe(false);
  });

  it('rejects invalid options with BAD_CONFIG', () => {
    const clock = new FakeClock(0);
    const output = (): void => {};
    expect(() => new ArqSession({ conv: 1, mtu: 50, clock, output })).toThrow(/mtu/);
    expect(() => new ArqSession({ conv: -1, mtu: 1392, clock, output })).toThrow(/conv/);
    expect(() => new ArqSession({ conv: 1, mtu: 1392, clock, output, recvWindow: 70_000 })).toThrow(
      /recvWindow/,
    );
    const s = new ArqSession({ conv: 1, mtu: 1392, clock, output });
    expect(() => s.setMtu(70_000)).toThrow(/mtu/);
    expect(() => new ArqSession({ conv: 1, mtu: 1392, clock, output, incarnation: 0 })).toThrow(
      /incarnation/,
    );
    expect(s.incarnation).toBeGreaterThanOrEqual(1);
    expect(s.incarnation).toBeLessThanOrEqual(255);
  });
});
