import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../errors.js';
import { MAX_DURATION_MS, parseDuration } from './duration.js';

const UNIT = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

describe('parseDuration', () => {
  it('parses the documented forms', () => {
    expect(parseDuration('30m')).toBe(30 * 60_000);
    expect(parseDuration('24h')).toBe(86_400_000);
    expect(parseDuration('7d')).toBe(7 * 86_400_000);
    expect(parseDuration('1h30m')).toBe(90 * 60_000);
    expect(parseDuration('90s')).toBe(90_000);
  });

  it('refuses bad text, naming the field', () => {
    for (const bad of [
      '',
      '0s',
      '10',
      'h',
      '1x',
      '-1h',
      '1.5h',
      '1h ',
      ' 1h',
      '367d',
      '1h-',
      'x'.repeat(40),
    ]) {
      expect(() => parseDuration(bad, 'pskTtl')).toThrowError(/pskTtl/);
    }
  });

  it('property: any sum of parts within bounds parses to the sum', () => {
    const part = fc.tuple(fc.integer({ min: 0, max: 500 }), fc.constantFrom('s', 'm', 'h', 'd'));
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), (parts) => {
        const text = parts.map(([n, u]) => `${n}${u}`).join('');
        const want = parts.reduce((a, [n, u]) => a + n * UNIT[u as keyof typeof UNIT], 0);
        if (want >= 1000 && want <= MAX_DURATION_MS && text.length <= 32) {
          expect(parseDuration(text)).toBe(want);
        } else {
          expect(() => parseDuration(text)).toThrow();
        }
      }),
    );
  });

  it('property: arbitrary strings either parse to a bounded integer or throw BAD_INPUT', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        try {
          const ms = parseDuration(s);
          expect(Number.isInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(1000);
          expect(ms).toBeLessThanOrEqual(MAX_DURATION_MS);
          expect(s).toMatch(/^(\d+[smhd])+$/);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        }
      }),
    );
  });
});
