import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseUpstreamTarget, upstreamTarget } from './upstream-identity.js';

const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9:._@-]{0,40}$/);

describe('upstream identity in the OPEN text', () => {
  it('round-trips any valid identity, and plain @upstream means none', () => {
    fc.assert(
      fc.property(name, fc.array(name, { maxLength: 8 }), fc.boolean(), (user, groups, readOnly) => {
        const text = upstreamTarget({ user, groups, readOnly });
        expect(parseUpstreamTarget(text)).toEqual({ user, groups, readOnly });
      }),
    );
    expect(upstreamTarget(null)).toBe('@upstream');
    expect(parseUpstreamTarget('@upstream')).toBeNull();
    expect(parseUpstreamTarget('kube:443')).toBeUndefined();
  });

  it('never yields a name with a control character, space or separator', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        let id: ReturnType<typeof parseUpstreamTarget>;
        try {
          id = parseUpstreamTarget(`@upstream?${s}`);
        } catch (err) {
          expect((err as { code: string }).code).toBe('BAD_INPUT');
          return;
        }
        for (const v of [id!.user, ...id!.groups]) expect(v).toMatch(/^[A-Za-z0-9:._@-]+$/);
      }),
    );
  });

  it('refuses malformed identities with BAD_INPUT', () => {
    for (const bad of [
      '@upstream?group=g',
      '@upstream?user=a&user=b',
      '@upstream?user=a%0d%0aX-Evil:%201',
      '@upstream?user=a%20b',
      '@upstream?user=a&ro=2',
      '@upstream?user=a&other=1',
      `@upstream?user=a${'&group=g'.repeat(9)}`,
    ]) {
      expect(() => parseUpstreamTarget(bad), bad).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    }
    expect(() => upstreamTarget({ user: 'a\r\nb', groups: [], readOnly: false })).toThrow(/not a valid name/);
  });
});
