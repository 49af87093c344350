/**
 * The agent checks every relay answer against its shared/api schema before acting on it. What a real in-process
 * relay sends is accepted (through AgentApi over TLS); the same bodies, mutated and served over a real socket, are
 * refused with RELAY_BAD_RESPONSE naming the broken field and never quoting a value; fields a newer relay may add
 * are accepted and dropped.
 */
import { createServer, type Server } from 'node:http';
import fc, { type JsonValue } from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../shared/errors.js';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import { startTestRelay, type TestRelay } from '../../test/helpers/test-relay.js';
import { AgentApi } from './api.js';

type Json = JsonValue;
type Call = 'register' | 'info' | 'lease' | 'unjoin';
const REQUEST: Record<Call, string> = {
  register: 'POST /api/v1/register',
  info: 'GET /api/v1/agent',
  lease: 'POST /api/v1/agent/lease',
  unjoin: 'DELETE /api/v1/agent',
};

/** Fields older relays leave out; the agent takes answers without them (docs/API.md). */
const OPTIONAL = new Set(['/tunnel/stunEndpoint', '/takesRelayedReason', '/valuesVersion@info']);

let t: TestRelay;
let fake: Server;
let fakeUrl = '';
let served = '';
const clients: RelayClient[] = [];
/** Real answers of the relay, by the agent call that gets them, and the secrets they carry. */
const real: { call: Call; body: Json }[] = [];
const secrets: string[] = [];

function clientOf(baseUrl: string): RelayClient {
  const c = new RelayClient({ baseUrl, trust: { kind: 'pin', pin: t.relay.caPin }, timeoutMs: 5000 });
  clients.push(c);
  return c;
}

async function realAnswers(cluster: string, bootstrapSecret: string): Promise<void> {
  const api = new AgentApi(clientOf(t.relay.url));
  const body = { cluster, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' };
  const reg = await t.call('POST', '/api/v1/register', { token: bootstrapSecret, body });
  expect(reg.status).toBe(201);
  secrets.push(reg.body.agentCredential, ...(reg.body.tunnel ? [reg.body.tunnel.presharedKey] : []));
  const agent = api.withCredential(reg.body.agentCredential);
  const token = reg.body.agentCredential;
  const info = await t.call('GET', '/api/v1/agent', { token });
  expect(await agent.info()).toEqual(info.body);
  real.push({ call: 'register', body: reg.body }, { call: 'info', body: info.body });
  if (reg.body.status !== 'Accepted') return;
  const lease = await t.call('POST', '/api/v1/agent/lease', { token, body: {} });
  expect(await agent.lease({})).toEqual({ ...lease.body, valuesVersion: expect.any(String) });
  real.push({ call: 'lease', body: lease.body });
}

beforeAll(async () => {
  t = await startTestRelay();
  const admin = t.relay.adminKey!;
  const created = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'shape-a' } });
  await realAnswers('shape-a', created.body.bootstrap.psk);
  const bootstrap = await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'bootstrap' } });
  await realAnswers('shape-p', bootstrap.body.token);
  const unjoined = await t.call('DELETE', '/api/v1/agent', { token: secrets[secrets.length - 1] });
  expect(unjoined.status).toBe(200);
  real.push({ call: 'unjoin', body: unjoined.body });
  fake = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(served);
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const address = fake.address();
  if (address === null || typeof address === 'string') throw new Error('the fake relay has no port');
  fakeUrl = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await new Promise((resolve) => fake?.close(resolve));
  await t?.cleanup();
});

/** Every field of a body, as a JSON pointer and its value. */
function fields(body: Json, at = ''): { path: string; value: Json }[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return [];
  return Object.entries(body).flatMap(([k, v]) =>
    v === undefined ? [] : [{ path: `${at}/${k}`, value: v }, ...fields(v, `${at}/${k}`)],
  );
}

/** A copy of `body` with the field at `path` replaced (undefined: removed). */
function withField(body: Json, path: string, value: Json | undefined): Json {
  const copy: Json = structuredClone(body);
  const keys = path.split('/').slice(1);
  let node = copy;
  for (const k of keys.slice(0, -1)) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return copy;
    node = node[k] ?? null;
  }
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return copy;
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

/**
 * A value the field's schema cannot take: of another JSON type, never null (several fields are nullable), and for
 * a null field neither a string nor an object (the nullable fields are strings and the tunnel).
 */
function otherType(v: Json, n: number): Json {
  if (v === null) return n % 2 === 0 ? [n] : n % 3 === 0;
  const choices: Json[] = [n, `changed-${n}`, n % 2 === 0, { changed: n }, [n]];
  const kind = (x: Json) => (Array.isArray(x) ? 'array' : typeof x);
  return choices.filter((c) => kind(c) !== kind(v))[n % 4]!;
}

async function ask(call: Call, text: string) {
  served = text;
  const api = new AgentApi(clientOf(fakeUrl), 'tac_x');
  if (call === 'register') return api.register('tpsk_x', { cluster: 'c', publicKey: 'k', agentVersion: '1' });
  if (call === 'info') return api.info();
  if (call === 'lease') return api.lease({});
  return api.unjoin();
}

async function refusal(call: Call, text: string): Promise<string> {
  const err = await ask(call, text).then(
    () => null,
    (e: unknown) => e,
  );
  if (!isTunnelError(err)) throw new Error(`expected ${call} to refuse the body, got ${String(err)}`);
  expect(err.code).toBe('RELAY_BAD_RESPONSE');
  for (const s of secrets) expect(err.message).not.toContain(s);
  return err.message;
}

describe('agent response validation', () => {
  it('accepts every answer the real relay sent, unchanged', async () => {
    expect(real.map((r) => r.call)).toEqual(['register', 'info', 'lease', 'register', 'info', 'unjoin']);
    expect(real[0]!.body).toMatchObject({ status: 'Accepted', tunnel: { address: '100.64.0.2/32' } });
    for (const r of real) expect(await ask(r.call, JSON.stringify(r.body))).toEqual(r.body);
  });

  it('property: a field removed or of the wrong type is refused, naming the field', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(1_000), fc.nat(1_000), fc.boolean(), async (pick, n, remove) => {
        const r = real[pick % real.length]!;
        const all = fields(r.body);
        const f = all[n % all.length]!;
        const optional = OPTIONAL.has(f.path) || OPTIONAL.has(`${f.path}@${r.call}`);
        if (remove && optional) {
          const without = withField(r.body, f.path, undefined);
          expect(await ask(r.call, JSON.stringify(without))).toEqual(without);
          return;
        }
        const mutated = withField(r.body, f.path, remove ? undefined : otherType(f.value, n));
        const message = await refusal(r.call, JSON.stringify(mutated));
        expect(message).toContain(REQUEST[r.call]);
        expect(message).toContain(f.path);
        expect(message).not.toContain(`changed-${n}`);
      }),
      { numRuns: 150 },
    );
  });

  it('property: a status outside Pending, Accepted, Denied is refused without quoting it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z]{1,12}$/), fc.nat(3), async (status, i) => {
        const r = real.filter((x) => x.call === 'register' || x.call === 'info')[i]!;
        const message = await refusal(r.call, JSON.stringify(withField(r.body, '/status', `zz${status}`)));
        expect(message).toContain('/status');
        expect(message).not.toContain(`zz${status}`);
      }),
      { numRuns: 50 },
    );
  });

  it('property: a body that is no object, or no JSON, is refused', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Call>('register', 'info', 'lease', 'unjoin'),
        fc.oneof(
          fc.jsonValue().filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)),
          fc.constant(undefined),
        ),
        async (call, value) => {
          await refusal(call, value === undefined ? '' : JSON.stringify(value));
        },
      ),
      { numRuns: 60 },
    );
    expect(await refusal('lease', '{"leaseDurationSeconds":')).toContain('not JSON');
  });

  it('property: fields a newer relay adds are accepted and dropped', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(1_000), fc.jsonValue({ maxDepth: 2 }), async (pick, extra) => {
        const r = real[pick % real.length]!;
        const objects = [
          '',
          ...fields(r.body)
            .filter((f) => f.value !== null && typeof f.value === 'object')
            .map((f) => f.path),
        ];
        const at = objects[pick % objects.length]!;
        expect(await ask(r.call, JSON.stringify(withField(r.body, `${at}/addedLater`, extra)))).toEqual(
          r.body,
        );
      }),
      { numRuns: 60 },
    );
  });
});
