import { describe, expect, it } from 'vitest';
import { measureInRounds, median, ratios, withSpread } from '../bench/throughput-rounds.js';

describe('throughput rounds', () => {
  it('takes every path once a round, the order reversed every other round', async () => {
    const calls: string[] = [];
    const path = (name: string) => ({
      name,
      round: async () => {
        calls.push(name);
        return { one: calls.length, many: 0, cpuPerGiB: Number.NaN };
      },
    });
    const figs = await measureInRounds([path('a'), path('b'), path('c')], 3);
    expect(calls.join('')).toBe('abccbaabc');
    expect(figs.map((f) => f.rounds.length)).toEqual([3, 3, 3]);
  });

  it('prints medians with their spread and takes ratios within each round', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(withSpread([10, 30, 20], 1)).toBe('20.0 (10.0-30.0)');
    expect(withSpread([Number.NaN], 1)).toBe('-');
    const f = (xs: number[]) => ({ name: 'x', rounds: xs.map((one) => ({ one, many: 0, cpuPerGiB: 0 })) });
    expect(ratios(f([2, 6]), f([1, 3]), (x) => x.one)).toEqual([2, 2]);
  });
});
