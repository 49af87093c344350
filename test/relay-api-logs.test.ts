/**
 * Captures ALL log output (level trace) of a full flow: first start, cluster create, a failed and a
 * successful registration, bootstrap-key registration, accept, lease, values by ?token=, token
 * create/revoke, delete, restart. None of the secrets may appear in it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
beforeAll(async () => {
  t = await startTestRelay({ flags: { logLevel: 'trace' } });
});
afterAll(async () => {
  await t?.cleanup();
});

describe('no secrets in logs', () => {
  it('a full registration flow logs none of the PSK, agent credential, access keys or WireGuard keys', async () => {
    const secrets: string[] = [];
    const admin = t.relay.adminKey!;
    secrets.push(admin);
    const created = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'secret-test' } });
    const psk = created.body.bootstrap.psk;
    secrets.push(psk);
    const kp = generateKeyPair();
    secrets.push(keyToBase64(kp.privateKey));
    // a wrong PSK first (failure path logs a warning)
    const wrong = `tpsk_${'Z'.repeat(43)}`;
    secrets.push(wrong);
    const body = { cluster: 'secret-test', publicKey: keyToBase64(kp.publicKey), agentVersion: '0.1.0' };
    expect((await t.call('POST', '/api/v1/register', { token: wrong, body })).status).toBe(401);
    const reg = await t.call('POST', '/api/v1/register', { token: psk, body });
    expect(reg.status).toBe(201);
    secrets.push(reg.body.agentCredential, reg.body.tunnel.presharedKey);
    await t.call('POST', '/api/v1/agent/lease', { token: reg.body.agentCredential, body: {} });
    // values through the query-string token form, and with a credential in the URL path of a 404
    const v = await t.call(
      'GET',
      `/clusters/secret-test?token=${encodeURIComponent(reg.body.agentCredential)}`,
    );
    expect(v.status).toBe(200);
    await t.call('GET', `/nothing/${psk}?token=${admin}`);
    // bootstrap key, double opt-in
    const boot = await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'bootstrap' } });
    secrets.push(boot.body.token);
    const kp2 = generateKeyPair();
    secrets.push(keyToBase64(kp2.privateKey));
    const reg2 = await t.call('POST', '/api/v1/register', {
      token: boot.body.token,
      body: { cluster: 'opt', publicKey: keyToBase64(kp2.publicKey), agentVersion: '0.1.0' },
    });
    secrets.push(reg2.body.agentCredential);
    const acc = await t.call('POST', '/api/v1/clusters/opt/accept', { token: admin });
    expect(acc.status).toBe(200);
    const agent2 = await t.call('GET', '/api/v1/agent', { token: reg2.body.agentCredential });
    secrets.push(agent2.body.tunnel.presharedKey);
    // rotate, revoke, delete, bad auth header, restart
    const rot = await t.call('POST', '/api/v1/clusters/secret-test/rotate-psk', { token: admin });
    secrets.push(rot.body.bootstrap.psk);
    await t.call('DELETE', `/api/v1/tokens/${boot.body.id}`, { token: admin });
    await t.call('GET', '/api/v1/clusters', {
      headers: { authorization: `Basic ${Buffer.from(`u:${admin}`).toString('base64')}` },
    });
    await t.call('GET', '/api/v1/clusters', {
      headers: { 'proxy-authorization': `Bearer ${admin}` },
      token: admin,
    });
    await t.call('DELETE', '/api/v1/clusters/secret-test', { token: admin });
    await t.restart();
    secrets.push(readFileSync(join(t.dir, 'hub.key'), 'utf8').trim());
    const tlsKey = readFileSync(join(t.dir, 'tls', 'key.pem'), 'utf8');
    secrets.push(tlsKey.split('\n')[1]!);

    const logs = t.logs.text;
    expect(logs.length).toBeGreaterThan(1000);
    expect(logs).toContain('"action":"cluster.register"'); // the flow really was logged
    expect(logs).toContain('token=REDACTED');
    for (const s of secrets) {
      expect(s.length).toBeGreaterThan(20);
      expect(logs.includes(s), `secret ${s.slice(0, 5)}... appears in the logs`).toBe(false);
      // nor the random part alone, nor its URL-encoded form
      const body = s.includes('_') ? s.slice(s.indexOf('_') + 1) : s;
      expect(logs.includes(body)).toBe(false);
      expect(logs.includes(encodeURIComponent(s))).toBe(false);
    }
  });
});
