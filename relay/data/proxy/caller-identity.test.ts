import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KeyPrincipal, Role } from '../../control/model/auth.js';
import { impersonationOn } from '../../control/model/impersonation.js';
import { callerIdentity, effectiveRole, withoutClientCredentials } from './caller-identity.js';

function key(role: Role, mintedRole?: Role): KeyPrincipal {
  const base = {
    kind: 'key',
    id: 'k_1',
    role,
    group: null,
    expiresAt: null,
    clusterCreatedAt: null,
  } as const;
  return mintedRole === undefined ? base : { ...base, mintedRole };
}

describe('caller identity', () => {
  it('names the key and its relay role; a kubeconfig key its minter role', () => {
    expect(callerIdentity(key('admin'), false)).toEqual({
      user: 'tunnel-relay:k_1',
      groups: ['tunnel-relay:admin'],
      readOnly: false,
    });
    expect(effectiveRole(key('viewer'))).toBe('viewer');
    expect(effectiveRole(key('group-editor:team-a'))).toBe('group-editor:team-a');
    expect(effectiveRole(key('cluster-proxy:edge', 'admin'))).toBe('admin');
    expect(effectiveRole(key('cluster-proxy:edge', 'group-editor:team-a'))).toBe('group-editor:team-a');
    expect(effectiveRole(key('cluster-proxy-read:edge', 'viewer'))).toBe('viewer');
    // Minted before the relay recorded the minter's role: the least it could be.
    expect(effectiveRole(key('cluster-proxy:edge'))).toBe('viewer');
    expect(callerIdentity(key('viewer'), true).readOnly).toBe(true);
  });

  it('is on unless the values say impersonate: false (the cluster first)', () => {
    expect(impersonationOn({}, {})).toBe(true);
    expect(impersonationOn({}, { impersonate: false })).toBe(false);
    expect(impersonationOn({ impersonate: true }, { impersonate: false })).toBe(true);
    expect(impersonationOn({ impersonate: false }, {})).toBe(false);
    expect(impersonationOn({ impersonate: 'no' }, {})).toBe(true);
  });
});

describe('withoutClientCredentials', () => {
  const credentialName = fc
    .tuple(
      fc.constantFrom(
        'authorization',
        'impersonate-user',
        'impersonate-group',
        'impersonate-uid',
        'impersonate-extra-x',
      ),
      fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    )
    .map(([n, up]) => [...n].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));

  it('drops Authorization and every Impersonate-* in any case and repetition, keeps the rest in order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.oneof(credentialName, fc.constantFrom('Accept', 'X-A', 'Impersonator')), fc.string()),
          {
            maxLength: 16,
          },
        ),
        (pairs) => {
          const out = withoutClientCredentials(pairs.flat());
          const kept = pairs.filter(([n]) => !/^(authorization|impersonate-.*)$/i.test(n)).flat();
          expect(out).toEqual(kept);
        },
      ),
    );
  });
});
