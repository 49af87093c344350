import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareVersions, isOlderVersion } from './version-compare.js';

const version = fc
  .tuple(
    fc.nat(50),
    fc.nat(50),
    fc.nat(50),
    fc.option(fc.constantFrom('alpha', 'beta.1', 'rc.2'), { nil: undefined }),
  )
  .map(([a, b, c, pre]) => `${a}.${b}.${c}${pre === undefined ? '' : `-${pre}`}`);

describe('compareVersions', () => {
  it('orders releases numerically, prereleases before their release', () => {
    expect(compareVersions('0.9.0', '0.10.0')).toBe(-1);
    expect(compareVersions('1.0.0', '0.99.99')).toBe(1);
    expect(compareVersions('v1.2.3', '1.2.3')).toBe(0);
    expect(compareVersions('1.2.3-rc.1', '1.2.3')).toBe(-1);
    expect(isOlderVersion('0.0.9', '0.1.0')).toBe(true);
    expect(isOlderVersion('0.1.0', '0.1.0')).toBe(false);
  });

  it('is null for anything that is not a version', () => {
    for (const bad of ['', 'dev', '1.2', '1.2.3.4', '01x.2.3', 'latest'])
      expect(compareVersions(bad, '1.0.0')).toBeNull();
  });

  it('is antisymmetric and never throws on any string (property)', () => {
    fc.assert(
      fc.property(version, version, (a, b) => {
        const ab = compareVersions(a, b);
        const ba = compareVersions(b, a);
        expect(ab).not.toBeNull();
        expect(ab).toBe(ba === null ? null : ba === 0 ? 0 : -ba);
      }),
    );
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const r = compareVersions(a, b);
        expect([null, -1, 0, 1]).toContain(r);
      }),
    );
  });
});
