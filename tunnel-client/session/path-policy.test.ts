import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathPolicyOf } from './agent-data-plane.js';

describe('the path value', () => {
  it('reads auto and relay-only; absent is auto', () => {
    const warned: string[] = [];
    const warn = (l: string) => warned.push(l);
    expect(pathPolicyOf({}, warn)).toBe('auto');
    expect(pathPolicyOf({ path: 'auto' }, warn)).toBe('auto');
    expect(pathPolicyOf({ path: 'relay-only' }, warn)).toBe('relay-only');
    expect(warned).toEqual([]);
  });

  it('anything else is auto, with a warning that names the value briefly (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.bigInt(), fc.string({ maxLength: 500 })), (v) => {
        fc.pre(v !== undefined && v !== 'auto' && v !== 'relay-only');
        const warned: string[] = [];
        expect(pathPolicyOf({ path: v }, (l) => warned.push(l))).toBe('auto');
        expect(warned.length).toBe(1);
        expect(warned[0]!.length).toBeLessThan(120);
      }),
    );
  });
});
