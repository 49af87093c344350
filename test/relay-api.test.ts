import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRelay, type TestRelay } from '../relay/test-support.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';

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
      `tunnel-client join --relay ${t.relay.publicUrl} --cluster edge-1 --psk ${psk} --ca-pin ${t.relay.caPin}`,
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
});
