import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import {
  assertValuesWithinLimits,
  checkValuesLimits,
  MAX_VALUES_BYTES,
  MAX_VALUES_DEPTH,
} from './values-limits.js';

/** Reference nesting depth (containers only; the document is level 1), recursive: small inputs only. */
function refDepth(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + Math.max(0, ...children.map(refDepth));
}

/** `{"a":{"a":...1...}}` nested `n` maps deep, built as text (JSON.stringify itself overflows). */
function chain(n: number): unknown {
  return JSON.parse(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);
}

const json = fc.jsonValue({ maxDepth: 6 });

describe('checkValuesLimits', () => {
  it('property: measures depth and compact JSON bytes exactly as JSON.stringify would', () => {
    fc.assert(
      fc.property(json, (v) => {
        const check = checkValuesLimits(v, 'values', { maxDepth: 1000, maxBytes: 10_000_000 });
        expect(check).toEqual({
          ok: true,
          depth: refDepth(v),
          bytes: Buffer.byteLength(JSON.stringify(v)),
        });
      }),
      { numRuns: 300 },
    );
  });

  it('property: accepts exactly the documents within both limits and names a limit that was crossed', () => {
    fc.assert(
      fc.property(
        json,
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 1, max: 400 }),
        (v, maxDepth, maxBytes) => {
          const check = checkValuesLimits(v, 'values', { maxDepth, maxBytes });
          const depth = refDepth(v);
          const bytes = Buffer.byteLength(JSON.stringify(v));
          expect(check.ok).toBe(depth <= maxDepth && bytes <= maxBytes);
          if (!check.ok) {
            expect(check.path.startsWith('values')).toBe(true);
            if (check.code === 'VALUES_TOO_DEEP') expect(depth).toBeGreaterThan(maxDepth);
            else expect(bytes).toBeGreaterThan(maxBytes);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: any nesting depth is measured without overflowing the stack; the path stops at the limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), (n) => {
        const check = checkValuesLimits(chain(n), 'values', { maxDepth: MAX_VALUES_DEPTH, maxBytes: 1e9 });
        expect(check.ok).toBe(n <= MAX_VALUES_DEPTH);
        if (!check.ok) {
          expect(check.code).toBe('VALUES_TOO_DEEP');
          expect(check.path).toBe(`values${'.a'.repeat(MAX_VALUES_DEPTH)}`);
        }
      }),
      { numRuns: 50 },
    );
    const million = JSON.parse(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`);
    expect(checkValuesLimits(million, 'values')).toMatchObject({ ok: false, code: 'VALUES_TOO_DEEP' });
  });

  it('the default limits: 32 levels and 64 KiB, with a 400 naming the limit and the path', () => {
    expect(() => assertValuesWithinLimits(chain(MAX_VALUES_DEPTH - 1), 'values')).not.toThrow();
    try {
      assertValuesWithinLimits({ x: chain(MAX_VALUES_DEPTH) }, 'values');
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'VALUES_TOO_DEEP')).toBe(true);
      expect((err as Error).message).toContain(`deeper than ${MAX_VALUES_DEPTH}`);
      expect((err as Error).message).toMatch(/^values\.x(\.a)+: /);
    }
    const big = { pad: 'x'.repeat(MAX_VALUES_BYTES), odd: { 'key with space': 1 } };
    try {
      assertValuesWithinLimits(big, 'values');
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'VALUES_TOO_LARGE')).toBe(true);
      expect((err as Error).message).toBe(
        `values.pad: values are over ${MAX_VALUES_BYTES} bytes as JSON (the limit is crossed here)`,
      );
    }
    const keyPath = checkValuesLimits({ 'a b': [{ c: [1] }] }, 'values', { maxDepth: 3, maxBytes: 1e6 });
    expect(keyPath).toEqual({ ok: false, code: 'VALUES_TOO_DEEP', path: 'values["a b"][0].c' });
  });
});
