/** Property tests for the small input parsers: roles, secret shapes, tunnel addresses. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRole } from './control/model/auth.js';
import {
  addressToIndex,
  FIRST_AGENT_INDEX,
  indexToAddress,
  LAST_AGENT_INDEX,
} from './control/store/addresses.js';
import { newSecret, SECRET_PREFIX, secretKind } from './ops/secrets.js';

describe('input parsers', () => {
  it('parseRole accepts exactly the four role forms', () => {
    expect(parseRole('admin')).toBe('admin');
    expect(parseRole('group-editor:team-a')).toBe('group-editor:team-a');
    for (const bad of [
      'Admin',
      'group-editor:',
      'group-editor:Team',
      'group-editor:a:b',
      'root',
      '',
      5,
      null,
    ]) {
      expect(parseRole(bad)).toBeNull();
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const r = parseRole(s);
        if (r !== null)
          expect(/^(admin|viewer|bootstrap|group-editor:[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/.test(r)).toBe(
            true,
          );
      }),
    );
  });

  it('secretKind recognises generated secrets and nothing that differs in shape', () => {
    for (const kind of Object.keys(SECRET_PREFIX) as Array<keyof typeof SECRET_PREFIX>) {
      expect(secretKind(newSecret(kind))).toBe(kind);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const k = secretKind(s);
        if (k !== null) {
          expect(s.startsWith(SECRET_PREFIX[k])).toBe(true);
          expect(s.length).toBe(SECRET_PREFIX[k].length + 43);
        }
      }),
    );
    expect(secretKind(`trk_${'a'.repeat(42)}`)).toBeNull();
    expect(secretKind(`trk_${'a'.repeat(42)}+`)).toBeNull();
  });

  it('tunnel addresses round-trip over the whole agent range and stay inside 100.64.0.0/10', () => {
    expect(indexToAddress(FIRST_AGENT_INDEX)).toBe('100.64.0.2');
    expect(indexToAddress(LAST_AGENT_INDEX)).toBe('100.127.255.254');
    expect(() => indexToAddress(1)).toThrow();
    expect(() => indexToAddress(LAST_AGENT_INDEX + 1)).toThrow();
    fc.assert(
      fc.property(fc.integer({ min: FIRST_AGENT_INDEX, max: LAST_AGENT_INDEX }), (i) => {
        const a = indexToAddress(i);
        expect(a).toMatch(/^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.\d{1,3}\.\d{1,3}$/);
        expect(addressToIndex(a)).toBe(i);
      }),
    );
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        const i = addressToIndex(ip);
        if (i !== null) expect(indexToAddress(i)).toBe(ip);
      }),
    );
    expect(addressToIndex('100.64.0.1')).toBeNull(); // the hub
  });
});
