import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { type PmtuProbe, PmtuSearch, type PmtuTimers } from './pmtu-search.js';

const BASE = 1_452;
const STEPS = [8_952, 16_336, 32_720, 64_952];
const T: PmtuTimers = { probeTimeoutMs: 1_000, maxProbes: 3, confirmMs: 5_000, raiseMs: 600_000 };

function search(ceiling: number, clock = new FakeClock()) {
  return { clock, s: new PmtuSearch({ clock, base: BASE, steps: STEPS, ceiling, timers: T }) };
}

/** Acks every probe the path carries (size <= pathMtu) and loses the rest, for `ms`, waking as asked. */
function drive(
  clock: FakeClock,
  s: PmtuSearch,
  o: { pathMtu: number; ms: number; active?: boolean },
): PmtuProbe[] {
  const sent: PmtuProbe[] = [];
  const end = clock.now() + o.ms;
  while (clock.now() < end) {
    const p = s.probeDue(o.active ?? true);
    if (p) {
      sent.push(p);
      if (p.size <= o.pathMtu) s.ack(p.txid, p.size);
    }
    const wake = s.nextWakeAt(o.active ?? true);
    clock.advance(Math.max(1, Math.min(wake, end) - clock.now()));
  }
  return sent;
}

describe('PmtuSearch', () => {
  it('climbs the steps the path carries, up to the ceiling (loopback: 64,952)', () => {
    const { clock, s } = search(65_508);
    expect(s.mtu).toBe(BASE);
    const sent = drive(clock, s, { pathMtu: 65_508, ms: 100 });
    expect(sent.map((p) => p.size)).toEqual(STEPS);
    expect(s.mtu).toBe(64_952);
    expect(s.phase).toBe('complete');
    expect(s.stats).toMatchObject({ probes: 4, acks: 4, raised: 4, lost: 0, blackHoles: 0 });
  });

  it('never probes above the first hop: a 1,500-byte link stays at the base, without a probe', () => {
    const { clock, s } = search(1_472);
    expect(drive(clock, s, { pathMtu: 1_472, ms: 60_000 })).toEqual([]);
    expect(s.mtu).toBe(BASE);
  });

  it('stops below a size lost maxProbes times in a row (a 9,000 hop behind a 64 KiB first hop)', () => {
    const { clock, s } = search(65_508);
    const sent = drive(clock, s, { pathMtu: 8_980, ms: 10_000, active: false });
    // 8,952 once, then 16,336 three times (each after a 1 s timeout), then no more.
    expect(sent.map((p) => p.size)).toEqual([8_952, 16_336, 16_336, 16_336]);
    expect(s.mtu).toBe(8_952);
    expect(s.phase).toBe('complete');
    expect(clock.now()).toBeGreaterThanOrEqual(3_000);
  });

  it('re-probes after raiseMs: a path that grew is found', () => {
    const { clock, s } = search(65_508);
    drive(clock, s, { pathMtu: 8_980, ms: 10_000, active: false });
    expect(s.mtu).toBe(8_952);
    drive(clock, s, { pathMtu: 65_508, ms: T.raiseMs, active: false });
    expect(s.mtu).toBe(64_952);
  });

  it('confirms a raised MTU under traffic only, and drops to the base on a black hole', () => {
    const { clock, s } = search(8_972);
    drive(clock, s, { pathMtu: 8_972, ms: 100 });
    expect(s.mtu).toBe(8_952);
    // Idle: no confirmation probes at all.
    expect(drive(clock, s, { pathMtu: 8_972, ms: 60_000, active: false })).toEqual([]);
    // Active: one confirmation every confirmMs, all answered.
    expect(drive(clock, s, { pathMtu: 8_972, ms: 20_000 }).map((p) => p.size)).toEqual([
      8_952, 8_952, 8_952, 8_952,
    ]);
    // Large datagrams now vanish: three confirmations lost (1 s apart), then the base.
    const start = clock.now();
    const sent = drive(clock, s, { pathMtu: 1_500, ms: 10_000 });
    expect(s.mtu).toBe(BASE);
    expect(s.stats.blackHoles).toBe(1);
    expect(sent.map((p) => p.size)).toEqual([8_952, 8_952, 8_952]);
    expect(sent.length).toBe(3);
    expect(clock.now() - start).toBeGreaterThanOrEqual(3_000);
    // Not searched again until the raise timer.
    expect(drive(clock, s, { pathMtu: 8_972, ms: T.raiseMs - 20_000 })).toEqual([]);
    drive(clock, s, { pathMtu: 8_972, ms: 30_000 });
    expect(s.mtu).toBe(8_952);
  });

  it('ignores an ack with another txid or size, and a second ack of the same probe', () => {
    const { s } = search(65_508);
    const p = s.probeDue(true)!;
    expect(s.ack(Buffer.alloc(12), p.size)).toBe(false);
    expect(s.ack(p.txid, p.size - 1)).toBe(false);
    expect(s.mtu).toBe(BASE);
    expect(s.ack(p.txid, p.size)).toBe(true);
    expect(s.ack(p.txid, p.size)).toBe(false);
    expect(s.mtu).toBe(p.size);
  });

  it('the MTU is always the base or a size whose probe was acknowledged, never above the ceiling (property)', () => {
    const event = fc.oneof(
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 700_000 }) }),
      fc.record({ kind: fc.constant('ack' as const), wrongSize: fc.boolean() }),
      fc.record({ kind: fc.constant('due' as const), active: fc.boolean() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 70_000 }),
        fc.array(event, { maxLength: 60 }),
        (ceiling, events) => {
          const { clock, s } = search(ceiling);
          const acked = new Set<number>([BASE]);
          let last: PmtuProbe | undefined;
          for (const e of events) {
            if (e.kind === 'advance') clock.advance(e.ms);
            else if (e.kind === 'due') last = s.probeDue(e.active) ?? last;
            else if (last && s.ack(last.txid, last.size + (e.wrongSize ? 1 : 0))) acked.add(last.size);
            expect(acked.has(s.mtu)).toBe(true);
            expect(s.mtu === BASE || s.mtu <= ceiling).toBe(true);
            expect(s.nextWakeAt(true)).toBeGreaterThanOrEqual(clock.now());
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
