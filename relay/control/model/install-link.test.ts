import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBackend, sqliteBackend } from '../../../test/helpers/store-backends.js';
import { hashSecret, secretKind } from '../../ops/secrets.js';
import { issueInstallLink, openInstallLink } from './install-link.js';

const postgres = new PostgresBackend();
beforeAll(() => postgres.start(), 120_000);
afterAll(() => postgres.stop());

const audit = { at: 1, actor: 'test', action: 'x', target: 't', source: 'local', detail: {} };

describe('install links', () => {
  it('seal the PSK under the token: only that token, cluster and PSK id open it', () => {
    const link = issueInstallLink('edge-1', 'p_1', 'tpsk_secret');
    expect(secretKind(link.token)).toBe('install');
    expect(link.record.hash).toBe(hashSecret(link.token));
    expect(link.record.sealed).not.toContain('tpsk_secret');
    const sealed = { cluster: 'edge-1', pskId: 'p_1', sealed: link.record.sealed };
    expect(openInstallLink(link.token, sealed)).toBe('tpsk_secret');
    expect(openInstallLink(issueInstallLink('edge-1', 'p_1', 'x').token, sealed)).toBeNull();
    expect(openInstallLink(link.token, { ...sealed, cluster: 'edge-2' })).toBeNull();
    expect(openInstallLink(link.token, { ...sealed, pskId: 'p_2' })).toBeNull();
  });

  it('opening never throws on any stored text or token (property)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ maxLength: 200 }), (token, sealed) => {
        expect(openInstallLink(token, { cluster: 'c', pskId: 'p', sealed })).toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['sqlite', sqliteBackend],
    ['postgres', postgres],
  ])(
    'the %s store gives a link out once, and not after its PSK expired or was replaced',
    async (_name, backend) => {
      const store = await backend.open();
      const link = issueInstallLink('edge-1', 'p_1', 'tpsk_a');
      const psk = { id: 'p_1', hash: hashSecret('tpsk_a'), expiresAt: 1_000, install: link.record };
      await store.createCluster(
        { name: 'edge-1', group: 'default', displayName: 'edge-1', createdAt: 0 },
        psk,
        audit,
      );
      expect(await store.takeInstallLink(hashSecret('tin_nothing'), 10, audit)).toEqual({
        ok: false,
        reason: 'unknown',
      });
      const taken = await Promise.all(
        [1, 2, 3].map(() => store.takeInstallLink(link.record.hash, 10, audit)),
      );
      expect(taken.filter((t) => t.ok)).toHaveLength(1);
      expect(taken.filter((t) => !t.ok && t.reason === 'used')).toHaveLength(2);

      const second = issueInstallLink('edge-1', 'p_2', 'tpsk_b');
      await store.rotatePsk(
        'edge-1',
        { id: 'p_2', hash: hashSecret('tpsk_b'), expiresAt: 1_000, install: second.record },
        audit,
      );
      expect(await store.takeInstallLink(second.record.hash, 1_000, audit)).toEqual({
        ok: false,
        reason: 'expired',
        cluster: 'edge-1',
      });
      const third = issueInstallLink('edge-1', 'p_3', 'tpsk_c');
      await store.rotatePsk(
        'edge-1',
        { id: 'p_3', hash: hashSecret('tpsk_c'), expiresAt: 5_000, install: third.record },
        audit,
      );
      const fourth = issueInstallLink('edge-1', 'p_4', 'tpsk_d');
      await store.rotatePsk(
        'edge-1',
        { id: 'p_4', hash: hashSecret('tpsk_d'), expiresAt: 5_000, install: fourth.record },
        audit,
      );
      expect(await store.takeInstallLink(third.record.hash, 10, audit)).toMatchObject({
        ok: false,
        reason: 'expired',
      });
      expect(await store.takeInstallLink(fourth.record.hash, 10, audit)).toMatchObject({
        ok: true,
        pskId: 'p_4',
      });
      await store.close();
    },
  );
});
