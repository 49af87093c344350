import { describe, expect, it } from 'vitest';
import { compareTai64n, TimestampGenerator, tai64n } from './tai64n.js';

describe('TAI64N', () => {
  it('encodes 0x400000000000000a + seconds, big-endian, nanoseconds whitened to 2^24', () => {
    // 2026-11-21T00:00:00.5Z
    const ms = Date.UTC(2026, 10, 21) + 500;
    const t = tai64n(ms);
    expect(t.length).toBe(12);
    expect(t.readBigUInt64BE(0)).toBe(0x400000000000000an + BigInt(Math.floor(ms / 1000)));
    const ns = t.readUInt32BE(8);
    expect(ns & 0xffffff).toBe(0);
    expect(ns).toBe(500_000_000 - (500_000_000 % 0x1000000));
  });

  it('the generator is strictly increasing even within one whitener step or when the clock goes back', () => {
    const g = new TimestampGenerator();
    const base = Date.UTC(2026, 0, 1);
    let prev = g.next(base);
    for (const ms of [base, base + 1, base + 2, base - 5000, base + 16, base + 999.9]) {
      const t = g.next(ms);
      expect(compareTai64n(t, prev)).toBeGreaterThan(0);
      prev = t;
    }
  });
});
