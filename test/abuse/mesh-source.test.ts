/**
 * Attack replay against the forwarded-source header: a hub replica of a fleet (real `tunnel-relay serve` on a
 * throw-away PostgreSQL, with the mesh key) takes failed registrations from an internet client that names another
 * source in `tunnel-mesh-source` on every attempt, bare or beside a forged, empty or doubled `tunnel-mesh-key`.
 * None is believed: beside a forged key the request is refused (403 MESH_UNAUTHENTICATED) before the registration
 * is looked at; bare, every failure counts against the client's own address, which is rate limited after
 * REGISTER_FAILURES.max of them, and no forged address reaches the limiter. Control: the same header beside the
 * real mesh key (what a relay-mode replica sends) is believed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup } from '../cli-harness.js';
import { cleanupAll } from '../helpers/cleanup.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from '../helpers/replica-fleet.js';
import { abuseRuns } from './scale.js';

const MAX_FAILURES = 10;
let fleet: ReplicaFleet;
let hub: Replica;
let meshKey: string;

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('abuse-mesh-source');
  meshKey = Buffer.from(readFileSync(fleet.files.meshKeyFile, 'latin1').trim(), 'latin1').toString('base64');
  hub = await fleet.startReplica();
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
  await cleanup();
  await cleanupAll();
});

function send(method: string, path: string, headers: Record<string, string | string[]>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      new URL(path, hub.ready.url),
      { method, headers, ca: fleet.files.caPem, agent: false, timeout: 5_000 },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** One registration with a PSK nobody issued, with `extra` headers. */
function failedRegistration(extra: Record<string, string | string[]>) {
  const body = JSON.stringify({
    cluster: 'nobody',
    publicKey: randomBytes(32).toString('base64'),
    agentVersion: '1.0.0',
  });
  return send(
    'POST',
    '/api/v1/register',
    {
      authorization: `Bearer psk_${randomBytes(16).toString('hex')}`,
      'content-type': 'application/json',
      ...extra,
    },
    body,
  );
}

async function countedSources(): Promise<string[]> {
  const r = await send('GET', '/api/v1/rate-limits', { authorization: `Bearer ${fleet.adminKey()}` });
  expect(r.status, r.body).toBe(200);
  return (JSON.parse(r.body).items as Array<{ source: string }>).map((i) => i.source);
}

const forgedKeys = (): Array<Record<string, string | string[]>> => [
  {},
  { 'tunnel-mesh-key': '' },
  { 'tunnel-mesh-key': randomBytes(48).toString('base64') },
  { 'tunnel-mesh-key': [meshKey, meshKey] },
  { 'tunnel-mesh-key': `${meshKey.slice(0, -2)}AA` },
];

describe('tunnel-mesh-source from an internet client', () => {
  it('is not believed: the failures count against the real address, which gets 429', async () => {
    // Every forged-key form once per bare attempt: MAX_FAILURES bare ones at scale 1.
    const forged = fc.sample(fc.ipV4(), forgedKeys().length * abuseRuns(MAX_FAILURES));
    let counted = 0;
    for (let i = 0; i < forged.length; i++) {
      const key = forgedKeys()[i % forgedKeys().length]!;
      const r = await failedRegistration({ 'tunnel-mesh-source': forged[i]!, ...key });
      if ('tunnel-mesh-key' in key) {
        // A forged mesh key is refused before the registration is looked at: no address is charged with it.
        expect([r.status, JSON.parse(r.body).error.code]).toEqual([403, 'MESH_UNAUTHENTICATED']);
        continue;
      }
      expect(r.status, r.body).toBe(counted < MAX_FAILURES ? 401 : 429);
      counted++;
    }
    expect(counted).toBeGreaterThanOrEqual(MAX_FAILURES);
    const limited = await failedRegistration({ 'tunnel-mesh-source': '203.0.113.99' });
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body).error.message).toContain('source 127.0.0.1 had');
    const sources = await countedSources();
    expect(sources).toContain('127.0.0.1');
    for (const f of forged) expect(sources).not.toContain(f);
  }, 60_000);

  it('beside the real mesh key it is believed (what a relay-mode replica sends)', async () => {
    const r = await failedRegistration({ 'tunnel-mesh-key': meshKey, 'tunnel-mesh-source': '198.51.100.7' });
    expect(r.status, r.body).toBe(401);
    expect(await countedSources()).toContain('198.51.100.7');
  });
});
