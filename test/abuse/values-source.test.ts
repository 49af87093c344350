/**
 * Attack replay: a group-editor read the platform values through the agent-facing values YAML,
 * `GET /clusters/NAME?source=platform-config`, while `GET /api/v1/values` answered 403 for the same document (and the
 * merged document, without `source`, carried them too). Now every form of that route that holds platform values is
 * read under the platform values' roles: admin and viewer, plus the cluster's own agent for its merged document (what
 * it runs with). A group-editor reads its cluster's own layer (`?source=cluster-annotation`) and nothing else, with
 * the key as Bearer or as `?token=`, and no refusal carries a platform value. Through the real `tunnel-relay serve`.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { api, type ServedRelay, serve } from './relay-fixture.js';

const PLATFORM_SECRET = 'platform-only-registry-password';
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

let relay: ServedRelay;
const keys: Record<'admin' | 'viewer' | 'editor' | 'otherEditor' | 'agent', string> = {
  admin: '',
  viewer: '',
  editor: '',
  otherEditor: '',
  agent: '',
};

async function put(path: string, body: unknown): Promise<number> {
  const r = await request(`${relay.ready.url}${path}`, {
    method: 'PUT',
    dispatcher: insecure,
    headers: { authorization: `Bearer ${relay.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  await r.body.text();
  return r.statusCode;
}

async function tokenFor(role: string): Promise<string> {
  const r = await api(relay.ready.url, 'POST', '/api/v1/tokens', { token: relay.adminKey, body: { role } });
  expect(r.status, r.text).toBe(201);
  return r.body.token;
}

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('abuse-values-source-'));
  keys.admin = relay.adminKey;
  keys.viewer = await tokenFor('viewer');
  keys.editor = await tokenFor('group-editor:team-a');
  keys.otherEditor = await tokenFor('group-editor:team-b');
  const created = await api(relay.ready.url, 'POST', '/api/v1/clusters', {
    token: relay.adminKey,
    body: { name: 'vals-a', group: 'team-a' },
  });
  expect(created.status, created.text).toBe(201);
  const registered = await api(relay.ready.url, 'POST', '/api/v1/register', {
    token: created.body.bootstrap.psk,
    body: { cluster: 'vals-a', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
  });
  expect(registered.status, registered.text).toBe(201);
  keys.agent = registered.body.agentCredential;
  expect(await put('/api/v1/values', { registry: { password: PLATFORM_SECRET }, image: { tag: '1' } })).toBe(
    200,
  );
  expect(await put('/api/v1/clusters/vals-a/values', { image: { repo: 'team-a-repo' } })).toBe(200);
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await insecure.close();
  await cleanup();
});

type Who = keyof typeof keys;
const SOURCES = ['platform-config', 'merged', 'cluster-annotation'] as const;

/** GET /clusters/vals-a for `source` as `who`, the key as Bearer or in `?token=`. */
async function valuesYaml(who: Who, source: (typeof SOURCES)[number], inQuery: boolean) {
  const params = new URLSearchParams();
  if (source !== 'merged') params.set('source', source);
  if (inQuery) params.set('token', keys[who]);
  const query = params.size > 0 ? `?${params}` : '';
  return api(relay.ready.url, 'GET', `/clusters/vals-a${query}`, inQuery ? {} : { token: keys[who] });
}

describe('the agent values YAML holds platform values only for their readers', () => {
  it('each role and source, with the key as Bearer and as ?token=', async () => {
    const expected: Record<Who, Record<(typeof SOURCES)[number], number>> = {
      admin: { 'platform-config': 200, merged: 200, 'cluster-annotation': 200 },
      viewer: { 'platform-config': 200, merged: 200, 'cluster-annotation': 200 },
      editor: { 'platform-config': 403, merged: 403, 'cluster-annotation': 200 },
      otherEditor: { 'platform-config': 404, merged: 404, 'cluster-annotation': 404 },
      agent: { 'platform-config': 403, merged: 200, 'cluster-annotation': 200 },
    };
    const seen: Record<string, Record<string, number>> = {};
    for (const who of Object.keys(expected) as Who[]) {
      seen[who] = {};
      for (const source of SOURCES) {
        for (const inQuery of [false, true]) {
          const r = await valuesYaml(who, source, inQuery);
          seen[who]![source] = r.status;
          const holdsPlatform = source !== 'cluster-annotation';
          if (r.status === 200) {
            expect(r.text.includes(PLATFORM_SECRET), `${who} ${source}`).toBe(holdsPlatform);
            if (source !== 'platform-config') expect(r.text).toContain('team-a-repo');
          } else {
            expect(r.text).not.toContain(PLATFORM_SECRET);
            expect(r.body.error.code).toBe(r.status === 403 ? 'FORBIDDEN' : 'NOT_FOUND');
          }
        }
      }
    }
    expect(seen).toEqual(expected);
  });

  it('agrees with GET /api/v1/values: who is refused there reads no platform value here', async () => {
    for (const who of ['editor', 'otherEditor', 'agent'] as const) {
      const direct = await api(relay.ready.url, 'GET', '/api/v1/values', { token: keys[who] });
      expect(direct.status).toBe(403);
      const viaYaml = await valuesYaml(who, 'platform-config', false);
      expect(viaYaml.status).not.toBe(200);
    }
    const editorRefusal = await valuesYaml('editor', 'merged', false);
    expect(editorRefusal.body.error.message).toContain('?source=cluster-annotation');
  });

  it('an unknown source is refused naming the sources there are', async () => {
    const r = await api(relay.ready.url, 'GET', '/clusters/vals-a?source=bogus', { token: keys.admin });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: 'BAD_INPUT',
      message: 'querystring.source: must be one of platform-config, cluster-annotation',
    });
  });
});
