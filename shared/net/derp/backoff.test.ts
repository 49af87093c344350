import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles per attempt between the jitter bounds and caps at 30 s', () => {
    expect(backoffDelay(1, DEFAULT_BACKOFF, () => 0)).toBe(250);
    expect(backoffDelay(1, DEFAULT_BACKOFF, () => 1)).toBe(500);
    expect(backoffDelay(4, DEFAULT_BACKOFF, () => 0)).toBe(2000);
    expect(backoffDelay(7, DEFAULT_BACKOFF, () => 1)).toBe(30_000);
    expect(backoffDelay(1000, DEFAULT_BACKOFF, () => 1)).toBe(30_000);
  });

  it('property: never below half the step nor above the cap, and never shrinking in expectation', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => {
        const d = backoffDelay(n, DEFAULT_BACKOFF, () => r);
        expect(d).toBeGreaterThanOrEqual(250);
        expect(d).toBeLessThanOrEqual(30_000);
        expect(backoffDelay(n + 1, DEFAULT_BACKOFF, () => r)).toBeGreaterThanOrEqual(d);
      }),
    );
  });
});
