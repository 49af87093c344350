import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MeshKey } from '../../ops/config/mesh-settings.js';
import { carriesMeshKey, meshHeaders, parseMeshSource } from './mesh-source.js';

describe('parseMeshSource', () => {
  it('takes any IPv4 or IPv6 address (no zone) as it is', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (a) => {
        expect(parseMeshSource(a)).toBe(a);
      }),
    );
  });

  it('any other value: null, never an error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.anything()), (v) => {
        const out = parseMeshSource(v);
        expect(
          out === null || (typeof v === 'string' && isIP(v) !== 0 && !v.includes('%') && out === v),
        ).toBe(true);
      }),
    );
    for (const v of [
      '127.0.0.1:80',
      'fe80::1%eth0',
      ' 10.0.0.1',
      '10.0.0.1,10.0.0.2',
      `${'1'.repeat(46)}`,
      '',
    ]) {
      expect(parseMeshSource(v)).toBeNull();
    }
  });
});

describe('carriesMeshKey', () => {
  const key = new MeshKey(Buffer.from('k'.repeat(48)));
  const [, value] = meshHeaders(key, undefined, null);

  it('only the fleet key, given once, counts', () => {
    expect(carriesMeshKey(key, { 'tunnel-mesh-key': value })).toBe(true);
    expect(carriesMeshKey(null, { 'tunnel-mesh-key': value })).toBe(false);
    fc.assert(
      fc.property(fc.string(), (v) => {
        expect(carriesMeshKey(key, { 'tunnel-mesh-key': v })).toBe(v === value);
      }),
    );
    expect(carriesMeshKey(key, {})).toBe(false);
  });
});
