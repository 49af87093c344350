/**
 * Property test over the HTTP input parsers: arbitrary JSON bodies, content types and paths sent to
 * every route never produce a 5xx, and every error is `{error:{code,message}}` with a code from
 * shared/errors.ts whose status matches. Uses fastify.inject on a real relay (no sockets needed).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../shared/errors.js';
import { abuseRuns } from './abuse/scale.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
let admin: string;
beforeAll(async () => {
  t = await startTestRelay({ flags: { logLevel: 'silent' } });
  admin = t.relay.adminKey!;
  await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'fuzz' } });
});
afterAll(async () => {
  await t?.cleanup();
});

const routes: Array<[string, string]> = [
  ['POST', '/api/v1/clusters'],
  ['POST', '/api/v1/clusters/fuzz/rotate-psk'],
  ['POST', '/api/v1/clusters/fuzz/accept'],
  ['POST', '/api/v1/tokens'],
  ['POST', '/api/v1/register'],
  ['POST', '/api/v1/agent/lease'],
  ['PUT', '/api/v1/values'],
  ['PUT', '/api/v1/clusters/fuzz/values'],
  ['GET', '/api/v1/audit'],
];

function checkReply(status: number, body: string, contentType: string | undefined) {
  expect(status).toBeLessThan(500);
  if (status >= 400) {
    expect(contentType).toMatch(/^application\/json/);
    const parsed = JSON.parse(body) as { error: { code: keyof typeof ERROR_CODES; message: string } };
    expect(Object.keys(parsed)).toEqual(['error']);
    expect(ERROR_CODES[parsed.error.code]?.status).toBe(status);
    expect(typeof parsed.error.message).toBe('string');
  }
}

describe('fuzzed requests', () => {
  it('arbitrary JSON bodies on every route: no 5xx, well-formed errors', async () => {
    const bodies = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.record(
        {
          name: fc.oneof(fc.string({ maxLength: 70 }), fc.integer()),
          group: fc.string({ maxLength: 20 }),
          pskTtl: fc.string({ maxLength: 10 }),
          role: fc.string({ maxLength: 20 }),
          cluster: fc.string({ maxLength: 20 }),
          publicKey: fc.string({ maxLength: 50 }),
          agentVersion: fc.string({ maxLength: 70 }),
          claims: fc.dictionary(fc.string({ maxLength: 70 }), fc.string({ maxLength: 20 }), { maxKeys: 25 }),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        bodies,
        fc.constantFrom(admin, 'tpsk_x', `tac_${'a'.repeat(43)}`, ''),
        async ([method, url], body, token) => {
          const res = await t.relay.fastify.inject({
            method: method as 'POST',
            url,
            headers: {
              'content-type': 'application/json',
              ...(token ? { authorization: `Bearer ${token}` } : {}),
            },
            payload: JSON.stringify(body),
          });
          checkReply(res.statusCode, res.body, res.headers['content-type'] as string | undefined);
        },
      ),
      { numRuns: abuseRuns(300) },
    );
  });

  it('arbitrary raw bodies, content types and paths: no 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST', 'PUT', 'GET', 'DELETE'),
        fc.oneof(
          fc.constantFrom(...routes.map((r) => r[1])),
          fc.webPath(),
          fc.string({ maxLength: 40 }).map((s) => `/api/v1/clusters/${encodeURIComponent(s)}`),
        ),
        fc.constantFrom(
          'application/json',
          'text/plain',
          'application/json; charset=utf-8',
          'application/x-www-form-urlencoded',
        ),
        fc.string({ maxLength: 200 }),
        async (method, url, contentType, payload) => {
          const res = await t.relay.fastify.inject({
            method: method as 'POST',
            url: url.startsWith('/') ? url : `/${url}`,
            headers: { 'content-type': contentType, authorization: `Bearer ${admin}` },
            ...(method === 'GET' || method === 'DELETE' ? {} : { payload }),
          });
          checkReply(res.statusCode, res.body, res.headers['content-type'] as string | undefined);
        },
      ),
      { numRuns: abuseRuns(300) },
    );
  });
});
