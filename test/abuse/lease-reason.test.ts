/**
 * Attack replay: an agent's lease body carrying a hostile `relayedReason` (the agent's own view of why it is
 * relayed, shown on its cluster). Garbage (wrong types, markup and terminal escapes, upper case, over 32
 * characters) is refused 400 BAD_INPUT naming the field, in a bounded message; a body over the 64 KiB limit is
 * 413; a well-formed code the relay does not know (a newer agent's) renews the lease, is not shown, and is counted
 * in /metrics (tunnel_relay_lease_reasons_ignored_total, which garbage does not move). Through
 * all of it the real agent's cluster stays connected and serves CONNECT. Through the real `tunnel-relay serve`
 * and `tunnel-client`, with the agent's own credential (the lease route takes no other).
 */
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  run,
  tempDir,
  waitConnected,
} from '../cli-harness.js';
import {
  api,
  createCluster,
  logLines,
  type ServedRelay,
  serve,
  upstream,
  viaConnect,
} from './relay-fixture.js';
import { abuseRuns } from './scale.js';

const CLUSTER = 'lease-why';
let relay: ServedRelay;
let agent: Proc;
let credential: string;
let web: { server: http.Server; port: number };

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('abuse-reason-'));
  web = await upstream('lease-why-upstream');
  const psk = await createCluster(relay, CLUSTER);
  const stateDir = join(tempDir('abuse-reason-agent-'), 'state');
  const joined = await run(
    CLIENT_BIN,
    [
      'join',
      ...['--relay', relay.ready.url, '--cluster', CLUSTER, '--psk', psk, '--ca-pin', relay.ready.caPin],
      ...['--state-dir', stateDir, '--upstream', `http://127.0.0.1:${web.port}`, '--wait'],
    ],
    cleanEnv(),
    40_000,
  );
  expect(joined.code, joined.stderr).toBe(0);
  credential = readFileSync(join(stateDir, 'credential'), 'utf8').trim();
  agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  await waitConnected(relay.adminEnv, CLUSTER);
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await relay?.proc.stop();
  web?.server.close();
  await cleanup();
});

const lease = (body: unknown) =>
  api(relay.ready.url, 'POST', '/api/v1/agent/lease', { token: credential, body });
const cluster = async () =>
  (await api(relay.ready.url, 'GET', `/api/v1/clusters/${CLUSTER}`, { token: relay.adminKey })).body;

/** tunnel_relay_lease_reasons_ignored_total as /metrics says now. */
async function ignoredReasons(): Promise<number> {
  const r = await api(relay.ready.url, 'GET', '/metrics');
  expect(r.status).toBe(200);
  const line = r.text.split('\n').find((l) => l.startsWith('tunnel_relay_lease_reasons_ignored_total '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Values that are no reason code: wrong types, other characters, too long. */
const garbage = fc.oneof(
  fc.string({ minLength: 33, maxLength: 4_000 }),
  fc.string({ maxLength: 32 }).filter((s) => !/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(s)),
  fc.constantFrom('<img src=x onerror=alert(1)>', '\u001b]0;pwned\u0007', 'UDP-BLOCKED', '443-only\n', ' '),
  fc.integer(),
  fc.boolean(),
  fc.array(fc.string(), { minLength: 1, maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })),
);

describe('hostile relayedReason in the lease body, real relay and agent', () => {
  it('garbage is 400 BAD_INPUT naming the field, in a bounded message that does not echo it whole', async () => {
    const samples = fc.sample(garbage, abuseRuns(40));
    const ignoredBefore = await ignoredReasons();
    for (const raw of samples) {
      const r = await lease({ relayedReason: raw });
      expect(r.status, JSON.stringify(raw)).toBe(400);
      expect(r.body.error.code).toBe('BAD_INPUT');
      expect(r.body.error.message).toContain('relayedReason');
      expect(r.body.error.message.length).toBeLessThan(200);
      if (typeof raw === 'string' && raw.length > 40) expect(r.body.error.message).not.toContain(raw);
    }
    expect(await ignoredReasons()).toBe(ignoredBefore);
  });

  it('a body over the 64 KiB limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const r = await lease({ relayedReason: 'a'.repeat(70_000) });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it("a well-formed code the relay does not know renews the lease, is not shown as the agent's, is counted", async () => {
    const codes = ['ipv6-only', 'no-candidates', 'confirming', 'zz-from-a-newer-agent'];
    const ignoredBefore = await ignoredReasons();
    expect(ignoredBefore).toBe(0);
    for (const code of codes) {
      const before = (await cluster()).leaseRenewTime;
      const r = await lease({ relayedReason: code });
      expect(r.status, r.text).toBe(200);
      expect(r.body.takesRelayedReason).toBe(true);
      const c = await cluster();
      expect(Date.parse(c.leaseRenewTime)).toBeGreaterThanOrEqual(Date.parse(before));
      expect(c.pathDetail?.reasonFrom ?? null).not.toBe('agent');
    }
    // The real agent's own renewals send known reasons or null: only these count.
    expect(await ignoredReasons()).toBe(ignoredBefore + codes.length);
  });

  it('the cluster keeps working: connected, CONNECT answers, no error logged', async () => {
    const c = await cluster();
    expect(c.connected).toBe(true);
    const got = await viaConnect(relay, CLUSTER, web.port);
    expect(`${got.stdout}${got.stderr}`).toBe('hello from lease-why-upstream\n200');
    const errors = logLines(relay.proc).filter((l) => Number(l.level) >= 50);
    expect(errors).toEqual([]);
  });
});
