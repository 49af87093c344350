/**
 * Bad input everywhere: names, duplicates, oversized bodies, wrong content types, unknown fields,
 * bad keys and claims, and bad PSKs (wrong, reused, expired, revoked), plus rate limiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../shared/clock.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
let admin: string;
const clock = new FakeClock(1_000_000, Date.UTC(2026, 10, 21, 10, 0, 0));
const pub = () => keyToBase64(generateKeyPair().publicKey);

beforeAll(async () => {
  t = await startTestRelay({ clock });
  admin = t.relay.adminKey!;
});
afterAll(async () => {
  await t?.cleanup();
});

function err(
  r: { status: number; body: { error?: { code: string; message: string } } },
  status: number,
  code: string,
) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error?.code).toBe(code);
  return r.body.error!.message;
}

describe('bad input', () => {
  it('refuses bad cluster and group names with INVALID_NAME naming the field', async () => {
    for (const name of ['Edge', '-a', 'a_b', 'a.b', '', 'x'.repeat(64)]) {
      const m = err(
        await t.call('POST', '/api/v1/clusters', { token: admin, body: { name } }),
        400,
        'INVALID_NAME',
      );
      expect(m).toContain('cluster name');
    }
    const m = err(
      await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'ok', group: 'Bad Group' } }),
      400,
      'INVALID_NAME',
    );
    expect(m).toContain('group');
    err(await t.call('GET', '/api/v1/clusters/NOT_VALID', { token: admin }), 400, 'INVALID_NAME');
    err(await t.call('GET', '/api/v1/clusters/absent', { token: admin }), 404, 'NOT_FOUND');
  });

  it('refuses duplicates with 409 CONFLICT', async () => {
    expect((await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'dup' } })).status).toBe(
      201,
    );
    err(await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'dup' } }), 409, 'CONFLICT');
  });

  it('refuses unknown fields, wrong types and missing fields naming the field', async () => {
    let m = err(
      await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'u1', colour: 'red' } }),
      400,
      'BAD_INPUT',
    );
    expect(m).toBe('body.colour: unknown field');
    m = err(await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 5 } }), 400, 'BAD_INPUT');
    expect(m).toContain('body.name');
    m = err(await t.call('POST', '/api/v1/clusters', { token: admin, body: {} }), 400, 'BAD_INPUT');
    expect(m).toBe('body.name: required');
    m = err(
      await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'u2', pskTtl: '3 days' } }),
      400,
      'BAD_INPUT',
    );
    expect(m).toContain('pskTtl');
    err(await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'root' } }), 400, 'BAD_INPUT');
    err(
      await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'group-editor:Bad' } }),
      400,
      'BAD_INPUT',
    );
    err(await t.call('GET', '/api/v1/audit?limit=abc', { token: admin }), 400, 'BAD_INPUT');
    err(await t.call('PUT', '/api/v1/values', { token: admin, body: [1, 2] }), 400, 'BAD_INPUT');
  });

  it('refuses malformed JSON, wrong content types and oversized bodies', async () => {
    err(await t.call('POST', '/api/v1/clusters', { token: admin, rawBody: '{"name":' }), 400, 'BAD_INPUT');
    err(
      await t.call('POST', '/api/v1/clusters', {
        token: admin,
        rawBody: 'name=x',
        contentType: 'application/x-www-form-urlencoded',
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    err(
      await t.call('POST', '/api/v1/clusters', {
        token: admin,
        rawBody: 'name: x',
        contentType: 'text/yaml',
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    const big = { name: 'big', displayName: 'x'.repeat(70 * 1024) };
    err(await t.call('POST', '/api/v1/clusters', { token: admin, body: big }), 413, 'PAYLOAD_TOO_LARGE');
    const bigValues = { blob: 'y'.repeat(65 * 1024) };
    err(await t.call('PUT', '/api/v1/values', { token: admin, body: bigValues }), 413, 'PAYLOAD_TOO_LARGE');
    err(await t.call('GET', '/api/v1/nothing-here', { token: admin }), 404, 'NOT_FOUND');
  });

  it('refuses bad public keys and claims over the caps', async () => {
    const c = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'claims' } });
    const psk = c.body.bootstrap.psk;
    const body = (over: Record<string, unknown>) => ({
      cluster: 'claims',
      publicKey: pub(),
      agentVersion: '0.1.0',
      ...over,
    });
    err(
      await t.call('POST', '/api/v1/register', { token: psk, body: body({ publicKey: 'abc' }) }),
      400,
      'KEY_INVALID',
    );
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
    err(
      await t.call('POST', '/api/v1/register', { token: psk, body: body({ claims: many }) }),
      400,
      'BAD_INPUT',
    );
    err(
      await t.call('POST', '/api/v1/register', {
        token: psk,
        body: body({ claims: { ['k'.repeat(65)]: 'v' } }),
      }),
      400,
      'BAD_INPUT',
    );
    err(
      await t.call('POST', '/api/v1/register', {
        token: psk,
        body: body({ claims: { k: 'v'.repeat(1025) } }),
      }),
      400,
      'BAD_INPUT',
    );
    // none of those consumed the PSK
    const ok = await t.call('POST', '/api/v1/register', {
      token: psk,
      body: body({
        claims: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'.repeat(1024)])),
      }),
    });
    expect(ok.status).toBe(201);
    const lease = await t.call('POST', '/api/v1/agent/lease', {
      token: ok.body.agentCredential,
      body: { claims: { a: 'b' }, extra: 1 },
    });
    err(lease, 400, 'BAD_INPUT');
  });
});

describe('access key expiry', () => {
  it('an access key stops working at its expiry', async () => {
    const k = await t.call('POST', '/api/v1/tokens', {
      token: admin,
      body: { role: 'viewer', expiresIn: '1m' },
    });
    expect(k.body.expiresAt).toBe(new Date(clock.wallNow() + 60_000).toISOString());
    expect((await t.call('GET', '/api/v1/clusters', { token: k.body.token })).status).toBe(200);
    clock.advance(60_000);
    err(await t.call('GET', '/api/v1/clusters', { token: k.body.token }), 401, 'UNAUTHENTICATED');
    err(
      await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'viewer', expiresIn: '0s' } }),
      400,
      'BAD_INPUT',
    );
  });
});

describe('bootstrap PSKs', () => {
  it('wrong, reused, expired and rotated-away PSKs all get the same 401', async () => {
    const c = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'psk-a', pskTtl: '30m' },
    });
    const psk = c.body.bootstrap.psk;
    const reg = (token: string, cluster = 'psk-a') =>
      t.call('POST', '/api/v1/register', {
        token,
        body: { cluster, publicKey: pub(), agentVersion: '0.1.0' },
      });
    // The message names the cluster the caller asked for (its fix command) and nothing else that differs.
    const anyName = (message: string, cluster: string) => message.replaceAll(cluster, 'NAME');
    const messages = new Set<string>();
    // wrong
    messages.add(anyName(err(await reg(`tpsk_${'A'.repeat(43)}`), 401, 'BOOTSTRAP_REJECTED'), 'psk-a'));
    // right PSK, other cluster
    await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'psk-b' } });
    messages.add(anyName(err(await reg(psk, 'psk-b'), 401, 'BOOTSTRAP_REJECTED'), 'psk-b'));
    // used once, then reused
    expect((await reg(psk)).status).toBe(201);
    messages.add(anyName(err(await reg(psk), 401, 'BOOTSTRAP_REJECTED'), 'psk-a'));
    // expired
    const e = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'psk-e', pskTtl: '1m' },
    });
    clock.advance(61_000);
    messages.add(anyName(err(await reg(e.body.bootstrap.psk, 'psk-e'), 401, 'BOOTSTRAP_REJECTED'), 'psk-e'));
    // rotated away
    const r = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'psk-r' } });
    const rot = await t.call('POST', '/api/v1/clusters/psk-r/rotate-psk', {
      token: admin,
      body: { pskTtl: '1h' },
    });
    expect(rot.status).toBe(200);
    messages.add(anyName(err(await reg(r.body.bootstrap.psk, 'psk-r'), 401, 'BOOTSTRAP_REJECTED'), 'psk-r'));
    expect((await reg(rot.body.bootstrap.psk, 'psk-r')).status).toBe(201);
    // deleted cluster
    const d = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'psk-d' } });
    await t.call('DELETE', '/api/v1/clusters/psk-d', { token: admin });
    messages.add(anyName(err(await reg(d.body.bootstrap.psk, 'psk-d'), 401, 'BOOTSTRAP_REJECTED'), 'psk-d'));
    expect(messages.size).toBe(1); // no hint which
  });

  it('a PSK used by 8 concurrent registrations registers exactly one', async () => {
    clock.advance(5 * 60_000);
    const c = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'race' } });
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.call('POST', '/api/v1/register', {
          token: c.body.bootstrap.psk,
          body: { cluster: 'race', publicKey: pub(), agentVersion: '0.1.0' },
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 401, 401, 401, 401, 401, 401, 401]);
    const winner = results.find((r) => r.status === 201)!;
    const got = await t.call('GET', '/api/v1/clusters/race', { token: admin });
    expect(got.body.address).toBe(winner.body.tunnel.address.replace('/32', ''));
  });

  it('limits failures per source (10 per 5 minutes) with Retry-After; the right PSK still registers', async () => {
    clock.advance(5 * 60_000); // forget the failures of the test before
    const c = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'limited', pskTtl: '7d' },
    });
    const wrong = `tpsk_${'B'.repeat(43)}`;
    const reg = (token: string) =>
      t.call('POST', '/api/v1/register', {
        token,
        body: { cluster: 'limited', publicKey: pub(), agentVersion: '0.1.0' },
      });
    for (let i = 0; i < 10; i++) err(await reg(wrong), 401, 'BOOTSTRAP_REJECTED');
    clock.advance(60_000);
    const limited = await reg(wrong);
    err(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('240');
    expect(limited.body.error.message).toContain('retry after 240 s');
    // a valid credential is never refused by the limit
    expect((await reg(c.body.bootstrap.psk)).status).toBe(201);
    err(await reg(c.body.bootstrap.psk), 429, 'RATE_LIMITED');
    clock.advance(4 * 60_000);
    err(await reg(wrong), 401, 'BOOTSTRAP_REJECTED');
    const metrics = await t.call('GET', '/metrics');
    expect(metrics.text).toMatch(/tunnel_relay_registrations_total\{result="rate_limited"\} [1-9]/);
  });

  it('rate limits per source address across cluster names', async () => {
    clock.advance(5 * 60_000);
    const wrong = `tpsk_${'C'.repeat(43)}`;
    for (let i = 0; i < 10; i++) {
      const r = await t.call('POST', '/api/v1/register', {
        token: wrong,
        body: { cluster: `spray-${i}`, publicKey: pub(), agentVersion: '0.1.0' },
      });
      err(r, 401, 'BOOTSTRAP_REJECTED');
    }
    const r = await t.call('POST', '/api/v1/register', {
      token: wrong,
      body: { cluster: 'spray-new', publicKey: pub(), agentVersion: '0.1.0' },
    });
    err(r, 429, 'RATE_LIMITED');
    clock.advance(5 * 60_000);
  });
});
