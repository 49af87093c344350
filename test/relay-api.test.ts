import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
let admin: string;
beforeAll(async () => {
  t = await startTestRelay();
  admin = t.relay.adminKey!;
});
afterAll(async () => {
  await t?.cleanup();
});

describe('relay API over TLS', () => {
  it('serves health, readiness and metrics', async () => {
    expect((await t.call('GET', '/healthz')).text).toBe('ok\n');
    expect((await t.call('GET', '/readyz')).status).toBe(200);
    const m = await t.call('GET', '/metrics');
    expect(m.text).toContain('tunnel_relay_clusters{status="Pending"} 0');
  });

  it('creates a cluster, registers an agent with the PSK, renews its lease', async () => {
    const created = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'edge-1' } });
    expect(created.status).toBe(201);
    const psk: string = created.body.bootstrap.psk;
    expect(psk).toMatch(/^tpsk_[A-Za-z0-9_-]{43}$/);
    expect(created.body.bootstrap.joinCommand).toBe(
      `TUNNEL_CLIENT_PSK=${psk} tunnel-client join --relay ${t.relay.publicUrl} --cluster edge-1 --ca-pin ${t.relay.caPin}`,
    );
    const kp = generateKeyPair();
    const reg = await t.call('POST', '/api/v1/register', {
      token: psk,
      body: { cluster: 'edge-1', publicKey: keyToBase64(kp.publicKey), agentVersion: '0.1.0' },
    });
    expect(reg.status).toBe(201);
    expect(reg.body.status).toBe('Accepted');
    expect(reg.body.tunnel.address).toBe('100.64.0.2/32');
    expect(reg.body.tunnel.hubPublicKey).toBe(t.relay.hubPublicKey);
    const lease = await t.call('POST', '/api/v1/agent/lease', { token: reg.body.agentCredential, body: {} });
    expect(lease.status).toBe(200);
    const got = await t.call('GET', '/api/v1/clusters/edge-1', { token: admin });
    expect(got.body.conditions.map((c: { status: string }) => c.status)).toEqual(['True', 'True']);
  });

  it('puts upstream in the join command (create and rotate-psk); a bad one is refused before anything is made', async () => {
    const created = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'edge-up', upstream: 'https://10.0.0.1:6443' },
    });
    expect(created.status).toBe(201);
    expect(created.body.bootstrap.joinCommand).toMatch(
      / --cluster edge-up --ca-pin \S+ --upstream https:\/\/10\.0\.0\.1:6443$/,
    );
    const rotated = await t.call('POST', '/api/v1/clusters/edge-up/rotate-psk', {
      token: admin,
      body: { upstream: 'http://kube.local:8080' },
    });
    expect(rotated.body.bootstrap.joinCommand).toMatch(/ --upstream http:\/\/kube\.local:8080$/);
    const bad = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'edge-bad-up', upstream: 'ftp://x' },
    });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'BAD_INPUT']);
    expect(bad.body.error.message).toBe('upstream "ftp://x" must be an http:// or https:// URL');
    expect((await t.call('GET', '/api/v1/clusters/edge-bad-up', { token: admin })).status).toBe(404);
  });
});
