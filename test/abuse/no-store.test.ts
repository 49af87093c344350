/**
 * Attack replay: answers that carry secrets (a new access key, a kubeconfig with its key, a bootstrap PSK and its
 * install link, the agent credential and the tunnel's preshared key, the agent's tunnel settings, agent values) were
 * sent without `Cache-Control`, so a shared cache, a proxy or the browser's disk cache between the caller and the
 * relay could keep them. Now every answer under /api/ and /clusters/ carries `Cache-Control: no-store`: each
 * secret-bearing route is called through the real `tunnel-relay serve`, its refusals too; the console's files keep
 * their own caching.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { type ServedRelay, serve } from './relay-fixture.js';

const insecure = new Agent({ connect: { rejectUnauthorized: false } });
let relay: ServedRelay;

interface Answer {
  status: number;
  cacheControl: string | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  body: any;
}

async function call(
  method: 'GET' | 'POST' | 'PUT' | 'HEAD',
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<Answer> {
  const res = await request(`${relay.ready.url}${path}`, {
    method,
    dispatcher: insecure,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  const json = String(res.headers['content-type'] ?? '').startsWith('application/json');
  const cacheControl = res.headers['cache-control'];
  return {
    status: res.statusCode,
    cacheControl: typeof cacheControl === 'string' ? cacheControl : undefined,
    body: json ? JSON.parse(text) : text,
  };
}

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('abuse-no-store-'));
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await insecure.close();
  await cleanup();
});

describe('Cache-Control: no-store on every answer that can carry a secret', () => {
  it('each secret-bearing route, as it answers the secret', async () => {
    const admin = relay.adminKey;
    const seen: Record<string, [number, string | undefined]> = {};
    const note = (what: string, a: Answer) => {
      seen[what] = [a.status, a.cacheControl];
      return a;
    };
    const token = note(
      'token create',
      await call('POST', '/api/v1/tokens', { token: admin, body: { role: 'viewer' } }),
    );
    expect(token.body.token).toMatch(/^trk_/);
    const created = note(
      'cluster create',
      await call('POST', '/api/v1/clusters', { token: admin, body: { name: 'ns-a' } }),
    );
    expect(created.body.bootstrap.psk).toMatch(/^tpsk_/);
    const rotated = note(
      'rotate-psk',
      await call('POST', '/api/v1/clusters/ns-a/rotate-psk', { token: admin }),
    );
    expect(rotated.body.bootstrap.psk).toMatch(/^tpsk_/);
    note('install link', await call('GET', new URL(rotated.body.bootstrap.installUrl).pathname));
    const registered = note(
      'register',
      await call('POST', '/api/v1/register', {
        token: rotated.body.bootstrap.psk,
        body: { cluster: 'ns-a', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
      }),
    );
    expect(registered.body.agentCredential).toMatch(/^tac_/);
    const agentCredential: string = registered.body.agentCredential;
    note('agent', await call('GET', '/api/v1/agent', { token: agentCredential }));
    const kubeconfig = note(
      'kubeconfig',
      await call('POST', '/api/v1/clusters/ns-a/kubeconfig', { token: admin }),
    );
    expect(JSON.stringify(kubeconfig.body.kubeconfig)).toContain('"token":"trk_');
    note(
      'platform values set',
      await call('PUT', '/api/v1/values', { token: admin, body: { password: 's3cret' } }),
    );
    note('platform values', await call('GET', '/api/v1/values', { token: admin }));
    note('cluster values', await call('GET', '/api/v1/clusters/ns-a/values', { token: admin }));
    note('values YAML', await call('GET', `/clusters/ns-a?token=${encodeURIComponent(agentCredential)}`));
    note('token list', await call('GET', '/api/v1/tokens', { token: admin }));
    note('whoami', await call('GET', '/api/v1/whoami', { token: admin }));
    note('cluster get', await call('GET', '/api/v1/clusters/ns-a', { token: admin }));
    const expected = Object.fromEntries(
      Object.entries(seen).map(([what, [status]]) => [what, [status, 'no-store'] as const]),
    );
    expect(seen).toEqual(expected);
    for (const [what, [status]] of Object.entries(seen)) expect(status, what).toBeLessThan(300);
  });

  it('refusals and unknown API paths too; the console keeps its own caching', async () => {
    const answers = {
      unauthenticated: await call('GET', '/api/v1/tokens'),
      forbidden: await call('POST', '/api/v1/tokens', { token: relay.adminKey, body: { role: 'nope' } }),
      unknownRoute: await call('GET', '/api/v1/no-such-route'),
      unknownInstall: await call('GET', '/api/v1/install/tin_unknown'),
      installHead: await call('HEAD', '/api/v1/install/tin_unknown'),
      valuesUnauthenticated: await call('GET', '/clusters/ns-a'),
    };
    for (const [what, a] of Object.entries(answers))
      expect([what, a.cacheControl]).toEqual([what, 'no-store']);
    expect(answers.unauthenticated.status).toBe(401);
    const index = await call('GET', '/ui/');
    expect(index.status).toBe(200);
    expect(index.cacheControl).toBe('no-cache');
  });
});
