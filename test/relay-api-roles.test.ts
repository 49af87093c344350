/**
 * Every role against every route family (docs/API.md's table), on a real relay over TLS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
/** A well-formed agent key that names no agent (routes that name one). */
const HIDDEN_PROBE_KEY = keyToBase64(generateKeyPair().publicKey);
const tok: Record<string, string> = {};
let agentCred = '';
let otherAgentCred = '';

async function makeKey(role: string): Promise<string> {
  const r = await t.call('POST', '/api/v1/tokens', { token: tok.admin, body: { role } });
  expect(r.status).toBe(201);
  return r.body.token;
}

async function makeAgent(name: string, group: string): Promise<string> {
  const c = await t.call('POST', '/api/v1/clusters', { token: tok.admin, body: { name, group } });
  expect(c.status).toBe(201);
  const r = await t.call('POST', '/api/v1/register', {
    token: c.body.bootstrap.psk,
    body: { cluster: name, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
  });
  expect(r.status).toBe(201);
  return r.body.agentCredential;
}

beforeAll(async () => {
  t = await startTestRelay();
  tok.admin = t.relay.adminKey!;
  tok.viewer = await makeKey('viewer');
  tok.editorA = await makeKey('group-editor:team-a');
  tok.bootstrap = await makeKey('bootstrap');
  agentCred = await makeAgent('in-a', 'team-a');
  otherAgentCred = await makeAgent('in-b', 'team-b');
  tok.agent = agentCred;
});
afterAll(async () => {
  await t?.cleanup();
});

type Who = 'admin' | 'viewer' | 'editorA' | 'bootstrap' | 'agent' | 'none';
const everyone: Who[] = ['admin', 'viewer', 'editorA', 'bootstrap', 'agent', 'none'];

async function as(who: Who, method: string, path: string, body?: unknown) {
  return t.call(method, path, {
    ...(who === 'none' ? {} : { token: tok[who]! }),
    ...(body !== undefined ? { body } : {}),
  });
}

function expectCode(
  r: { status: number; body: { error?: { code: string } } },
  status: number,
  code?: string,
) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  if (code) expect(r.body.error?.code).toBe(code);
}

describe('role table', () => {
  it('cluster create: admin anywhere, group-editor only in its group, others forbidden', async () => {
    const allowed: Record<Who, number> = {
      admin: 201,
      editorA: 201,
      viewer: 403,
      bootstrap: 403,
      agent: 403,
      none: 401,
    };
    for (const who of everyone) {
      const r = await as(who, 'POST', '/api/v1/clusters', {
        name: `new-${who.toLowerCase()}`,
        group: 'team-a',
      });
      expectCode(
        r,
        allowed[who],
        r.status === 403 ? 'FORBIDDEN' : r.status === 401 ? 'UNAUTHENTICATED' : undefined,
      );
    }
    expectCode(
      await as('editorA', 'POST', '/api/v1/clusters', { name: 'sneaky', group: 'team-b' }),
      403,
      'FORBIDDEN',
    );
    // default group is not team-a either
    expectCode(await as('editorA', 'POST', '/api/v1/clusters', { name: 'sneaky2' }), 403, 'FORBIDDEN');
  });

  it('cluster list/get: admin and viewer see all, group-editor only its group', async () => {
    const all = await as('admin', 'GET', '/api/v1/clusters');
    expect(all.body.items.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(['in-a', 'in-b']),
    );
    const viewer = await as('viewer', 'GET', '/api/v1/clusters');
    expect(viewer.body.items.length).toBe(all.body.items.length);
    const ed = await as('editorA', 'GET', '/api/v1/clusters');
    expect(ed.body.items.every((c: { group: string }) => c.group === 'team-a')).toBe(true);
    expect(ed.body.items.length).toBeGreaterThan(0);
    for (const who of ['bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', '/api/v1/clusters'), 403, 'FORBIDDEN');
    expectCode(await as('none', 'GET', '/api/v1/clusters'), 401, 'UNAUTHENTICATED');
    expectCode(await as('editorA', 'GET', '/api/v1/clusters/in-a'), 200);
    expectCode(await as('editorA', 'GET', '/api/v1/clusters/in-b'), 404, 'NOT_FOUND');
    expectCode(await as('viewer', 'GET', '/api/v1/clusters/in-b'), 200);
    expectCode(await as('editorA', 'POST', '/api/v1/clusters/in-b/kubeconfig', {}), 404, 'NOT_FOUND');
    // A viewer's kubeconfig carries a read-only key for that one cluster's proxy; an admin's a read-write one.
    const kc = await as('viewer', 'POST', '/api/v1/clusters/in-b/kubeconfig', {});
    expect(kc.status).toBe(201);
    expect(kc.body.role).toBe('cluster-proxy-read:in-b');
    expect(kc.body.kubeconfig.clusters[0].cluster.server).toContain('/api/v1/clusters/in-b/proxy');
    const byEditor = await as('editorA', 'POST', '/api/v1/clusters/in-a/kubeconfig', {});
    expect(byEditor.body.role).toBe('cluster-proxy:in-a');
    expectCode(await as('agent', 'POST', '/api/v1/clusters/in-a/kubeconfig', {}), 403, 'FORBIDDEN');
  });

  it('accept/deny/rotate-psk/delete: admin, and group-editor in its group only', async () => {
    for (const action of ['accept', 'deny', 'rotate-psk']) {
      // viewer and the cluster's own agent see in-a but may not change it; a bootstrap key does not see it
      for (const who of ['viewer', 'agent'] as const) {
        expectCode(await as(who, 'POST', `/api/v1/clusters/in-a/${action}`), 403, 'FORBIDDEN');
      }
      expectCode(await as('bootstrap', 'POST', `/api/v1/clusters/in-a/${action}`), 404, 'NOT_FOUND');
      expectCode(await as('editorA', 'POST', `/api/v1/clusters/in-b/${action}`), 404, 'NOT_FOUND');
    }
    expectCode(await as('editorA', 'POST', '/api/v1/clusters/in-a/rotate-psk', {}), 200);
    expectCode(await as('viewer', 'DELETE', '/api/v1/clusters/in-a'), 403, 'FORBIDDEN');
    expectCode(await as('editorA', 'DELETE', '/api/v1/clusters/in-b'), 404, 'NOT_FOUND');
    expectCode(await as('editorA', 'POST', '/api/v1/clusters', { name: 'tmp-a', group: 'team-a' }), 201);
    expectCode(await as('editorA', 'DELETE', '/api/v1/clusters/tmp-a'), 200);
  });

  it('removing an agent of a set: admin, and group-editor in its group only; viewers and agents may not', async () => {
    const key = encodeURIComponent(keyToBase64(generateKeyPair().publicKey));
    for (const who of ['viewer', 'agent'] as const)
      expectCode(await as(who, 'DELETE', `/api/v1/clusters/in-a/agents/${key}`), 403, 'FORBIDDEN');
    expectCode(await as('bootstrap', 'DELETE', `/api/v1/clusters/in-a/agents/${key}`), 404, 'NOT_FOUND');
    expectCode(await as('editorA', 'DELETE', `/api/v1/clusters/in-b/agents/${key}`), 404, 'NOT_FOUND');
    // Allowed, and the key names no agent of the cluster: NOT_FOUND naming the key, not the cluster.
    const r = await as('editorA', 'DELETE', `/api/v1/clusters/in-a/agents/${key}`);
    expectCode(r, 404, 'NOT_FOUND');
    expect(r.body.error.message).toContain(decodeURIComponent(key));
  });

  it('a cluster the caller may not see answers exactly as a missing one (no group, no existence)', async () => {
    // Every route that names a cluster, for callers that may not see in-b (another group's editor, a bootstrap
    // key, another cluster's agent): the reply must equal the one for a name that does not exist, byte for
    // byte apart from the name.
    const routes: Array<[string, (name: string) => string, unknown?]> = [
      ['GET', (n) => `/api/v1/clusters/${n}`],
      ['POST', (n) => `/api/v1/clusters/${n}/kubeconfig`, {}],
      ['POST', (n) => `/api/v1/clusters/${n}/accept`],
      ['POST', (n) => `/api/v1/clusters/${n}/deny`],
      ['POST', (n) => `/api/v1/clusters/${n}/rotate-psk`, {}],
      ['DELETE', (n) => `/api/v1/clusters/${n}`],
      ['GET', (n) => `/api/v1/clusters/${n}/values`],
      ['PUT', (n) => `/api/v1/clusters/${n}/values`, { x: 1 }],
      ['DELETE', (n) => `/api/v1/clusters/${n}/agents/${encodeURIComponent(HIDDEN_PROBE_KEY)}`],
      ['GET', (n) => `/clusters/${n}`],
    ];
    for (const who of ['editorA', 'bootstrap', 'agent'] as const) {
      for (const [method, path, body] of routes) {
        const hidden = await as(who, method, path('in-b'), body);
        const missing = await as(who, method, path('no-such-b'), body);
        const what = `${who} ${method} ${path('in-b')}`;
        expect(hidden.status, what).toBe(404);
        expect(hidden.body, what).toEqual({
          error: { code: 'NOT_FOUND', message: 'cluster "in-b" does not exist' },
        });
        expect(hidden.text.replaceAll('in-b', 'no-such-b'), what).toBe(missing.text);
        expect(hidden.text, what).not.toContain('team-b');
        expect(hidden.headers['content-type'], what).toBe(missing.headers['content-type']);
        expect(hidden.headers['content-length'], what).toBe(
          String(Number(missing.headers['content-length']) - 'no-such-b'.length + 'in-b'.length),
        );
      }
    }
    expect((await as('admin', 'GET', '/api/v1/clusters/in-b')).status).toBe(200);
  });

  it('tokens: admin only', async () => {
    for (const who of ['viewer', 'editorA', 'bootstrap', 'agent'] as const) {
      expectCode(await as(who, 'POST', '/api/v1/tokens', { role: 'admin' }), 403, 'FORBIDDEN');
      expectCode(await as(who, 'GET', '/api/v1/tokens'), 403, 'FORBIDDEN');
      expectCode(await as(who, 'DELETE', '/api/v1/tokens/k_0000000000000000'), 403, 'FORBIDDEN');
    }
    const list = await as('admin', 'GET', '/api/v1/tokens');
    expect(list.body.items.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(list.body)).not.toMatch(/trk_/);
  });

  it('platform values: admin sets, admin and viewer get', async () => {
    expectCode(await as('admin', 'PUT', '/api/v1/values', { image: { tag: '1' } }), 200);
    for (const who of ['viewer', 'editorA', 'bootstrap', 'agent'] as const) {
      expectCode(await as(who, 'PUT', '/api/v1/values', { a: 1 }), 403, 'FORBIDDEN');
    }
    expect((await as('viewer', 'GET', '/api/v1/values')).body).toEqual({ image: { tag: '1' } });
    for (const who of ['editorA', 'bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', '/api/v1/values'), 403);
  });

  it('cluster values: admin and group editor set; viewer, editor and own agent get', async () => {
    expectCode(await as('editorA', 'PUT', '/api/v1/clusters/in-a/values', { image: { repo: 'r' } }), 200);
    expectCode(await as('editorA', 'PUT', '/api/v1/clusters/in-b/values', { x: 1 }), 404, 'NOT_FOUND');
    expectCode(await as('viewer', 'PUT', '/api/v1/clusters/in-a/values', { x: 1 }), 403, 'FORBIDDEN');
    expectCode(await as('agent', 'PUT', '/api/v1/clusters/in-a/values', { x: 1 }), 403, 'FORBIDDEN');
    expect((await as('agent', 'GET', '/api/v1/clusters/in-a/values')).body).toEqual({ image: { repo: 'r' } });
    expectCode(await as('agent', 'GET', '/api/v1/clusters/in-b/values'), 404, 'NOT_FOUND');
    expectCode(await as('bootstrap', 'GET', '/api/v1/clusters/in-a/values'), 404, 'NOT_FOUND');
    // agent-facing YAML: merged, by source, with ?token= or Bearer
    const merged = await t.call('GET', `/clusters/in-a?token=${encodeURIComponent(agentCred)}`);
    expect(merged.status).toBe(200);
    expect(merged.headers['content-type']).toMatch(/^text\/yaml/);
    expect(merged.text).toBe('image:\n  tag: "1"\n  repo: r\n');
    const platform = await t.call('GET', '/clusters/in-a?source=platform-config', { token: tok.viewer });
    expect(platform.text).toBe('image:\n  tag: "1"\n');
    const own = await t.call('GET', `/clusters/in-a?source=cluster-annotation&token=${tok.editorA}`);
    expect(own.text).toBe('image:\n  repo: r\n');
    expectCode(await t.call('GET', `/clusters/in-a?token=${otherAgentCred}`), 404, 'NOT_FOUND');
    expectCode(await t.call('GET', '/clusters/in-a?source=nope', { token: tok.admin }), 400, 'BAD_INPUT');
  });

  it('audit: admin and viewer', async () => {
    const a = await as('viewer', 'GET', '/api/v1/audit?limit=5');
    expect(a.status).toBe(200);
    expect(a.body.items.length).toBe(5);
    expect(a.body.items[0]).toMatchObject({ source: '127.0.0.1' });
    for (const who of ['editorA', 'bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', '/api/v1/audit'), 403);
  });

  it('list pages: every list route takes limit and continue, and pages hold what the role may see', async () => {
    // Every page of `path` (limit `limit`), following `continue`; the items of all pages.
    async function walk(who: Who, path: string, limit: number): Promise<Array<Record<string, unknown>>> {
      const items: Array<Record<string, unknown>> = [];
      let next: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const sep = path.includes('?') ? '&' : '?';
        const cont = next === undefined ? '' : `&continue=${encodeURIComponent(next)}`;
        const r = await as(who, 'GET', `${path}${sep}limit=${limit}${cont}`);
        expectCode(r, 200);
        expect(r.body.items.length).toBeLessThanOrEqual(limit);
        items.push(...r.body.items);
        next = r.body.continue;
        if (next === undefined) return items;
        expect(r.body.items.length).toBe(limit);
      }
      throw new Error(`${path}: paging did not end`);
    }
    for (const name of ['pg-c', 'pg-a', 'pg-b']) {
      expectCode(await as('admin', 'POST', '/api/v1/clusters', { name, group: 'team-a' }), 201);
    }
    const names = (items: Array<Record<string, unknown>>) => items.map((c) => c.name as string);
    const whole = await as('admin', 'GET', '/api/v1/clusters?limit=500');
    expect(whole.body.continue).toBeUndefined();
    const all = names(whole.body.items);
    expect(all).toEqual([...all].sort());
    expect(names(await walk('admin', '/api/v1/clusters', 2))).toEqual(all);
    expect(names(await walk('viewer', '/api/v1/clusters', 3))).toEqual(all);
    const teamA = names(whole.body.items.filter((c: { group: string }) => c.group === 'team-a'));
    expect(names(await walk('editorA', '/api/v1/clusters', 2))).toEqual(teamA);
    expect(names(await walk('admin', '/api/v1/clusters?group=team-a', 2))).toEqual(teamA);
    expect(names(await walk('editorA', '/api/v1/clusters?group=team-a', 1))).toEqual(teamA);
    expectCode(await as('editorA', 'GET', '/api/v1/clusters?group=team-b'), 403, 'FORBIDDEN');
    const pending = names(whole.body.items.filter((c: { status: string }) => c.status === 'Pending'));
    expect(names(await walk('viewer', '/api/v1/clusters?status=Pending', 2))).toEqual(pending);
    for (const who of ['bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', '/api/v1/clusters?limit=1'), 403, 'FORBIDDEN');
    expectCode(await as('none', 'GET', '/api/v1/clusters?limit=1'), 401, 'UNAUTHENTICATED');

    const keys = await walk('admin', '/api/v1/tokens', 2);
    const keyIds = keys.map((k) => k.id as string);
    expect(new Set(keyIds).size).toBe(keyIds.length);
    expect(keyIds).toEqual(
      (await as('admin', 'GET', '/api/v1/tokens?limit=1000')).body.items.map((k: { id: string }) => k.id),
    );
    const tokensPage = await as('admin', 'GET', '/api/v1/tokens?limit=1');
    for (const who of ['viewer', 'editorA', 'bootstrap', 'agent'] as const) {
      const cont = encodeURIComponent(tokensPage.body.continue);
      expectCode(await as(who, 'GET', `/api/v1/tokens?limit=1&continue=${cont}`), 403, 'FORBIDDEN');
    }

    // A token is the list's own: another list's, a made-up one or a bad limit is 400 BAD_INPUT naming it.
    const clusterPage = await as('admin', 'GET', '/api/v1/clusters?limit=1');
    const foreign = await as(
      'admin',
      'GET',
      `/api/v1/tokens?continue=${encodeURIComponent(clusterPage.body.continue)}`,
    );
    expectCode(foreign, 400, 'BAD_INPUT');
    expect(foreign.body.error.message).toMatch(/^continue: /);
    for (const bad of ['x', 'bm90LWpzb24', encodeURIComponent('{"l":"clusters","k":"a"}')]) {
      const r = await as('admin', 'GET', `/api/v1/clusters?continue=${bad}`);
      expectCode(r, 400, 'BAD_INPUT');
      expect(r.body.error.message).toMatch(/^continue: /);
    }
    expectCode(await as('admin', 'GET', '/api/v1/clusters?limit=0'), 400, 'BAD_INPUT');
    expectCode(await as('admin', 'GET', '/api/v1/clusters?limit=-1'), 400, 'BAD_INPUT');
    expectCode(await as('admin', 'GET', '/api/v1/clusters?status=Gone'), 400, 'BAD_INPUT');
    expect((await as('admin', 'GET', '/api/v1/clusters?limit=9999')).body.items).toEqual(whole.body.items);
  });

  it('audit pages: newest first, each row once, by actor and since; admin and viewer only', async () => {
    const editorId = (await as('editorA', 'GET', '/api/v1/whoami')).body.keyId as string;
    expectCode(await as('editorA', 'PUT', '/api/v1/clusters/in-a/values', { page: 1 }), 200);
    expectCode(await as('editorA', 'PUT', '/api/v1/clusters/in-a/values', { page: 2 }), 200);
    const first = await as('viewer', 'GET', '/api/v1/audit?limit=12');
    const ids: number[] = [];
    let next: string | undefined;
    for (let page = 0; page < 4; page++) {
      const cont = next === undefined ? '' : `&continue=${encodeURIComponent(next)}`;
      const r = await as('viewer', 'GET', `/api/v1/audit?limit=3${cont}`);
      ids.push(...r.body.items.map((a: { id: number }) => a.id));
      next = r.body.continue;
    }
    expect(ids).toEqual(first.body.items.map((a: { id: number }) => a.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const own = await as('admin', 'GET', `/api/v1/audit?limit=1000&actor=${editorId}`);
    expect(own.body.items.length).toBeGreaterThanOrEqual(2);
    expect(own.body.items.every((a: { actor: string }) => a.actor === editorId)).toBe(true);
    expect(own.body.items[0]).toMatchObject({ action: 'values.set', target: 'in-a' });
    const since = own.body.items[1].at as string;
    const recent = await as(
      'viewer',
      'GET',
      `/api/v1/audit?actor=${editorId}&since=${encodeURIComponent(since)}`,
    );
    expect(recent.body.items.every((a: { at: string }) => a.at >= since)).toBe(true);
    expect(recent.body.items.length).toBeGreaterThanOrEqual(2);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await as('viewer', 'GET', `/api/v1/audit?since=${future}`)).body.items).toEqual([]);
    const bad = await as('viewer', 'GET', '/api/v1/audit?since=yesterday');
    expectCode(bad, 400, 'BAD_INPUT');
    expect(bad.body.error.message).toContain('since "yesterday"');
    for (const who of ['editorA', 'bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', `/api/v1/audit?limit=1&actor=${editorId}`), 403, 'FORBIDDEN');
    expectCode(await as('none', 'GET', '/api/v1/audit?limit=1'), 401, 'UNAUTHENTICATED');
  });

  it('rate limits: admin and viewer list, only admin clears', async () => {
    expectCode(await as('viewer', 'GET', '/api/v1/rate-limits'), 200);
    for (const who of ['editorA', 'bootstrap', 'agent'] as const)
      expectCode(await as(who, 'GET', '/api/v1/rate-limits'), 403, 'FORBIDDEN');
    for (const who of ['viewer', 'editorA', 'bootstrap', 'agent'] as const)
      expectCode(await as(who, 'DELETE', '/api/v1/rate-limits?all=true'), 403, 'FORBIDDEN');
    expectCode(await as('none', 'DELETE', '/api/v1/rate-limits?all=true'), 401, 'UNAUTHENTICATED');
    expectCode(await as('admin', 'DELETE', '/api/v1/rate-limits?all=true'), 200);
  });

  it('agent routes take only an agent credential', async () => {
    for (const who of ['admin', 'viewer', 'editorA', 'bootstrap'] as const) {
      expectCode(await as(who, 'GET', '/api/v1/agent'), 403, 'FORBIDDEN');
      expectCode(await as(who, 'POST', '/api/v1/agent/lease', {}), 403, 'FORBIDDEN');
      expectCode(await as(who, 'DELETE', '/api/v1/agent'), 403, 'FORBIDDEN');
    }
    expectCode(await as('none', 'GET', '/api/v1/agent'), 401, 'UNAUTHENTICATED');
    const me = await as('agent', 'GET', '/api/v1/agent');
    expect(me.body).toMatchObject({ cluster: 'in-a', status: 'Accepted' });
    expect(me.body.valuesVersion).toMatch(/^[0-9a-f]{16}$/);
  });

  it('register takes a PSK or a bootstrap key, nothing else', async () => {
    const body = {
      cluster: 'reg-x',
      publicKey: keyToBase64(generateKeyPair().publicKey),
      agentVersion: '0.1.0',
    };
    for (const who of ['admin', 'viewer', 'editorA', 'agent', 'none'] as const) {
      expectCode(await as(who, 'POST', '/api/v1/register', body), 401, 'BOOTSTRAP_REJECTED');
    }
    const r = await as('bootstrap', 'POST', '/api/v1/register', body);
    expectCode(r, 201);
    expect(r.body).toMatchObject({ cluster: 'reg-x', status: 'Pending', tunnel: null });
  });

  it('a PSK is not an access key', async () => {
    const c = await as('admin', 'POST', '/api/v1/clusters', { name: 'psk-only' });
    const psk = c.body.bootstrap.psk;
    expectCode(await t.call('GET', '/api/v1/clusters', { token: psk }), 401, 'UNAUTHENTICATED');
    expectCode(await t.call('GET', '/api/v1/agent', { token: psk }), 401, 'UNAUTHENTICATED');
  });

  it('revoked and expired access keys stop working', async () => {
    const r = await t.call('POST', '/api/v1/tokens', {
      token: tok.admin,
      body: { role: 'viewer', description: 'short' },
    });
    expectCode(await t.call('GET', '/api/v1/clusters', { token: r.body.token }), 200);
    expectCode(await t.call('DELETE', `/api/v1/tokens/${r.body.id}`, { token: tok.admin }), 200);
    expectCode(await t.call('GET', '/api/v1/clusters', { token: r.body.token }), 401, 'UNAUTHENTICATED');
    expectCode(await t.call('DELETE', `/api/v1/tokens/${r.body.id}`, { token: tok.admin }), 404, 'NOT_FOUND');
  });

  it('a kubeconfig key (cluster-proxy:NAME) is refused by every API route, its own cluster included', async () => {
    const minted = await as('admin', 'POST', '/api/v1/clusters/in-a/kubeconfig', {});
    expect(minted.status).toBe(201);
    expect(minted.body.role).toBe('cluster-proxy:in-a');
    const key = minted.body.kubeconfig.users[0].user.token as string;
    const routes: Array<[string, string, number, unknown?]> = [
      ['GET', '/api/v1/clusters', 403],
      ['POST', '/api/v1/clusters', 403, { name: 'x-by-scoped', group: 'team-a' }],
      ['GET', '/api/v1/clusters/in-a', 404],
      ['DELETE', '/api/v1/clusters/in-a', 404],
      ['POST', '/api/v1/clusters/in-a/accept', 404],
      ['POST', '/api/v1/clusters/in-a/rotate-psk', 404, {}],
      ['POST', '/api/v1/clusters/in-a/kubeconfig', 404, {}],
      ['GET', '/api/v1/clusters/in-a/values', 404],
      ['PUT', '/api/v1/clusters/in-a/values', 404, { x: 1 }],
      ['GET', '/clusters/in-a', 404],
      ['GET', '/api/v1/tokens', 403],
      ['POST', '/api/v1/tokens', 403, { role: 'admin' }],
      ['GET', '/api/v1/audit', 403],
      ['GET', '/api/v1/values', 403],
      ['GET', '/api/v1/rate-limits', 403],
      ['GET', '/api/v1/agent', 403],
      ['POST', '/api/v1/register', 401, { cluster: 'in-a', publicKey: 'x', agentVersion: '0.1.0' }],
    ];
    for (const [method, path, status, body] of routes) {
      const r = await t.call(method, path, { token: key, ...(body !== undefined ? { body } : {}) });
      expect({ method, path, status: r.status }).toEqual({ method, path, status });
    }
    const list = await as('admin', 'GET', '/api/v1/tokens');
    const row = list.body.items.find((k: { id: string }) => k.id === minted.body.keyId);
    expect(row).toMatchObject({ role: 'cluster-proxy:in-a', revokedAt: null });
    expect(Date.parse(row.expiresAt) - Date.parse(row.createdAt)).toBe(24 * 3_600_000);
    const long = await as('admin', 'POST', '/api/v1/clusters/in-a/kubeconfig', { ttl: '31d' });
    expectCode(long, 400, 'BAD_INPUT');
  });
});
