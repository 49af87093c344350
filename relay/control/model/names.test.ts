import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { checkName, isDns1123Label } from './names.js';

/** Reference DNS-1123 label check written without a regex. */
function reference(s: string): boolean {
  if (s.length < 1 || s.length > 63) return false;
  const ok = (c: string) => (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  if (!ok(s[0]!) || !ok(s[s.length - 1]!)) return false;
  for (const c of s) if (!ok(c) && c !== '-') return false;
  return true;
}

describe('DNS-1123 names', () => {
  it('accepts and refuses the usual cases', () => {
    for (const good of ['a', 'edge-1', '0', 'a'.repeat(63), 'a--b']) expect(isDns1123Label(good)).toBe(true);
    for (const bad of ['', 'A', '-a', 'a-', 'a_b', 'a.b', 'a'.repeat(64), 'édge', ' a', 'a\n']) {
      expect(isDns1123Label(bad)).toBe(false);
    }
    expect(isDns1123Label(5)).toBe(false);
  });

  it('property: agrees with a reference implementation on arbitrary strings', () => {
    const chars = fc.constantFrom(...'abcxyz0129-_.A \n'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 70 }), fc.string({ unit: chars, maxLength: 70 })), (s) => {
        expect(isDns1123Label(s)).toBe(reference(s));
      }),
      { numRuns: 2000 },
    );
  });

  it('checkName throws INVALID_NAME naming the field and the value', () => {
    try {
      checkName('Bad_Name', 'cluster name');
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'INVALID_NAME')).toBe(true);
      expect((err as Error).message).toContain('cluster name "Bad_Name"');
    }
  });
});
