/**
 * Lifecycle on a real relay: double opt-in, deny, leases against a fake clock, delete and unjoin
 * with their data-plane events, live connection status, restart on the same data dir, graceful close.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdmittedPeer } from '../relay/control/model/admission.js';
import type { KeyEvent } from '../relay/control/model/relay-events.js';
import { FakeClock } from '../shared/clock.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';

let t: TestRelay;
let admin: string;
const clock = new FakeClock(1_000_000, Date.UTC(2026, 10, 21, 10, 0, 0));
const events: Array<[string, KeyEvent]> = [];
const admitted: AdmittedPeer[] = [];

function listen() {
  for (const name of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
    t.relay.hooks.on(name, (e) => events.push([name, e]));
  }
  t.relay.hooks.on('peer-admitted', (p) => admitted.push(p));
}

beforeAll(async () => {
  t = await startTestRelay({ clock });
  admin = t.relay.adminKey!;
  listen();
});
afterAll(async () => {
  await t?.cleanup();
});

const cond = (
  cluster: {
    conditions: Array<{ type: string; status: string; reason: string; lastTransitionTime: string }>;
  },
  type: string,
) => cluster.conditions.find((c) => c.type === type)!;

describe('first start', () => {
  it('writes the hub key and TLS key 0600 and prints an admin key once', () => {
    expect(statSync(join(t.dir, 'hub.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(t.dir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600);
    expect(admin).toMatch(/^trk_/);
    expect(t.relay.caPin).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe('double opt-in with an org-wide bootstrap key', () => {
  it('Pending until accepted, then the tunnel is issued; deny closes it', async () => {
    const boot = (await t.call('POST', '/api/v1/tokens', { token: admin, body: { role: 'bootstrap' } })).body
      .token;
    const kp = generateKeyPair();
    const publicKey = keyToBase64(kp.publicKey);
    const reg = await t.call('POST', '/api/v1/register', {
      token: boot,
      body: { cluster: 'opt-in', publicKey, agentVersion: '0.1.0', claims: { region: 'eu' } },
    });
    expect(reg.status).toBe(201);
    expect(reg.body).toMatchObject({ status: 'Pending', tunnel: null });
    const cred = reg.body.agentCredential;
    expect(await t.relay.hooks.isAdmitted(publicKey)).toBe(false);
    expect(admitted.find((p) => p.cluster === 'opt-in')).toBeUndefined();
    const pending = await t.call('GET', '/api/v1/agent', { token: cred });
    expect(pending.body).toMatchObject({ status: 'Pending', tunnel: null });
    const c1 = await t.call('GET', '/api/v1/clusters/opt-in', { token: admin });
    expect(c1.body).toMatchObject({
      status: 'Pending',
      group: 'default',
      publicKey,
      claims: { region: 'eu' },
    });
    expect(cond(c1.body, 'Joined')).toMatchObject({ status: 'False', reason: 'AwaitingAcceptance' });
    // the same key may register again while Pending; another key may not take the name
    const again = await t.call('POST', '/api/v1/register', {
      token: boot,
      body: { cluster: 'opt-in', publicKey, agentVersion: '0.1.1' },
    });
    expect(again.status).toBe(201);
    const other = await t.call('POST', '/api/v1/register', {
      token: boot,
      body: { cluster: 'opt-in', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
    });
    expect(other.status).toBe(409);
    // the first credential was replaced by the second registration
    expect((await t.call('GET', '/api/v1/agent', { token: cred })).status).toBe(401);
    const cred2 = again.body.agentCredential;

    const acc = await t.call('POST', '/api/v1/clusters/opt-in/accept', { token: admin });
    expect(acc.body.status).toBe('Accepted');
    expect(acc.body.address).toMatch(/^100\.64\.\d+\.\d+$/);
    const agent = await t.call('GET', '/api/v1/agent', { token: cred2 });
    expect(agent.body.status).toBe('Accepted');
    expect(agent.body.tunnel).toMatchObject({
      hubPublicKey: t.relay.hubPublicKey,
      address: `${acc.body.address}/32`,
      hubAddress: '100.64.0.1',
    });
    expect(await t.relay.hooks.isAdmitted(kp.publicKey)).toBe(true); // raw bytes, as the DERP server asks
    expect(await t.relay.hooks.isAdmitted(kp.publicKey.subarray(1))).toBe(false);
    const peer = await t.relay.hooks.admittedPeer(publicKey);
    expect(peer).toEqual({
      cluster: 'opt-in',
      publicKey,
      address: acc.body.address,
      presharedKey: agent.body.tunnel.presharedKey,
    });
    expect(admitted.filter((p) => p.cluster === 'opt-in')).toEqual([peer]);
    expect(await t.relay.hooks.admittedPeers()).toContainEqual(peer);

    const den = await t.call('POST', '/api/v1/clusters/opt-in/deny', { token: admin });
    expect(den.body.status).toBe('Denied');
    expect(events).toContainEqual(['cluster-denied', { cluster: 'opt-in', publicKey }]);
    expect(await t.relay.hooks.isAdmitted(publicKey)).toBe(false);
    const denied = await t.call('GET', '/api/v1/agent', { token: cred2 });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('CLUSTER_DENIED');
    expect((await t.call('POST', '/api/v1/agent/lease', { token: cred2, body: {} })).status).toBe(403);
    const values = await t.call('GET', `/clusters/opt-in?token=${cred2}`);
    expect(values.status).toBe(403);
    expect(values.body.error.code).toBe('CLUSTER_DENIED');
    expect((await t.call('GET', '/api/v1/clusters/opt-in/values', { token: cred2 })).status).toBe(403);
  });
});

describe('leases and conditions', () => {
  let cred = '';
  it('Available is True while the lease is fresh, Unknown after 3 missed periods', async () => {
    const c = await t.call('POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'leasy', displayName: 'Leasy' },
    });
    const reg = await t.call('POST', '/api/v1/register', {
      token: c.body.bootstrap.psk,
      body: { cluster: 'leasy', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
    });
    cred = reg.body.agentCredential;
    let got = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(cond(got, 'Joined').status).toBe('True');
    expect(cond(got, 'Available')).toMatchObject({ status: 'Unknown', reason: 'LeaseNotRenewed' });
    const lease = await t.call('POST', '/api/v1/agent/lease', {
      token: cred,
      body: { claims: { zone: 'a' } },
    });
    expect(lease.body).toMatchObject({ leaseDurationSeconds: 60, renewAfterSeconds: 60 });
    const firstRenew = clock.wallNow();
    got = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(cond(got, 'Available')).toMatchObject({ status: 'True', reason: 'LeaseFresh' });
    expect(got.leaseRenewTime).toBe(new Date(firstRenew).toISOString());
    expect(got.claims).toEqual({ zone: 'a' });
    expect((await t.call('GET', '/metrics')).text).toContain('\ntunnel_relay_leases_fresh 1\n');
    clock.advance(60_000);
    await t.call('POST', '/api/v1/agent/lease', { token: cred, body: {} });
    const lastRenew = clock.wallNow();
    clock.advance(180_000 - 1);
    got = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(cond(got, 'Available')).toMatchObject({
      status: 'True',
      lastTransitionTime: new Date(firstRenew).toISOString(),
    });
    clock.advance(1);
    got = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(cond(got, 'Available')).toMatchObject({
      status: 'Unknown',
      reason: 'LeaseUpdateStopped',
      lastTransitionTime: new Date(lastRenew + 180_000).toISOString(),
    });
    const metrics = (await t.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/tunnel_relay_lease_renewals_total [1-9]/);
    expect(metrics).toContain('\ntunnel_relay_leases_fresh 0\n');
    // a renewal after the gap starts a new Available run
    await t.call('POST', '/api/v1/agent/lease', { token: cred, body: {} });
    got = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(cond(got, 'Available')).toMatchObject({
      status: 'True',
      lastTransitionTime: new Date(clock.wallNow()).toISOString(),
    });
  });

  it('shows live connection status reported by the data plane', async () => {
    const c = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(c).toMatchObject({ connected: false, path: 'none', rttMs: null, bytesIn: 0 });
    expect(
      await t.relay.hooks.updateConnectionByKey(c.publicKey, {
        connected: true,
        path: 'relayed',
        rttMs: 12.5,
        bytesIn: 100,
        bytesOut: 50,
        lastHandshake: clock.wallNow(),
      }),
    ).toBe(true);
    expect((await t.call('GET', '/metrics')).text).toContain('\ntunnel_relay_agents_connected 1\n');
    const after = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(after).toMatchObject({
      connected: true,
      path: 'relayed',
      rttMs: 12.5,
      bytesIn: 100,
      bytesOut: 50,
      lastHandshake: new Date(clock.wallNow()).toISOString(),
    });
  });

  it('unjoin frees the address, revokes the credential and emits agent-unjoined', async () => {
    const before = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    const r = await t.call('DELETE', '/api/v1/agent', { token: cred });
    expect(r.body).toEqual({ unjoined: 'leasy' });
    expect(events).toContainEqual(['agent-unjoined', { cluster: 'leasy', publicKey: before.publicKey }]);
    expect((await t.call('GET', '/api/v1/agent', { token: cred })).status).toBe(401);
    const after = (await t.call('GET', '/api/v1/clusters/leasy', { token: admin })).body;
    expect(after).toMatchObject({ status: 'Pending', publicKey: null, address: null, connected: false });
  });
});

describe('re-join with a new key', () => {
  it('a rotated PSK registers a new key; the old key loses admission and gets agent-unjoined', async () => {
    const c = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'rejoin' } });
    const oldKey = keyToBase64(generateKeyPair().publicKey);
    const r1 = await t.call('POST', '/api/v1/register', {
      token: c.body.bootstrap.psk,
      body: { cluster: 'rejoin', publicKey: oldKey, agentVersion: '0.1.0' },
    });
    expect(await t.relay.hooks.isAdmitted(oldKey)).toBe(true);
    const rot = await t.call('POST', '/api/v1/clusters/rejoin/rotate-psk', { token: admin });
    const newKey = keyToBase64(generateKeyPair().publicKey);
    const r2 = await t.call('POST', '/api/v1/register', {
      token: rot.body.bootstrap.psk,
      body: { cluster: 'rejoin', publicKey: newKey, agentVersion: '0.1.0' },
    });
    expect(r2.status).toBe(201);
    expect(events).toContainEqual(['agent-unjoined', { cluster: 'rejoin', publicKey: oldKey }]);
    expect(await t.relay.hooks.isAdmitted(oldKey)).toBe(false);
    expect(await t.relay.hooks.isAdmitted(newKey)).toBe(true);
    expect(admitted.filter((p) => p.cluster === 'rejoin').map((p) => p.publicKey)).toEqual([oldKey, newKey]);
    expect((await t.call('GET', '/api/v1/agent', { token: r1.body.agentCredential })).status).toBe(401);
    expect((await t.call('GET', '/api/v1/agent', { token: r2.body.agentCredential })).status).toBe(200);
    await t.call('DELETE', '/api/v1/clusters/rejoin', { token: admin });
  });
});

describe('delete', () => {
  it('revokes PSKs and the credential, frees the address, emits cluster-deleted', async () => {
    const c = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'gone' } });
    const publicKey = keyToBase64(generateKeyPair().publicKey);
    const reg = await t.call('POST', '/api/v1/register', {
      token: c.body.bootstrap.psk,
      body: { cluster: 'gone', publicKey, agentVersion: '0.1.0' },
    });
    const address = reg.body.tunnel.address;
    const rotated = await t.call('POST', '/api/v1/clusters/gone/rotate-psk', { token: admin });
    expect((await t.call('DELETE', '/api/v1/clusters/gone', { token: admin })).body).toEqual({
      deleted: 'gone',
    });
    expect(events).toContainEqual(['cluster-deleted', { cluster: 'gone', publicKey }]);
    expect((await t.call('GET', '/api/v1/agent', { token: reg.body.agentCredential })).status).toBe(401);
    expect(await t.relay.hooks.isAdmitted(publicKey)).toBe(false);
    const reuse = await t.call('POST', '/api/v1/register', {
      token: rotated.body.bootstrap.psk,
      body: { cluster: 'gone', publicKey, agentVersion: '0.1.0' },
    });
    expect(reuse.status).toBe(401);
    // the freed address goes to the next registration
    const n = await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'next' } });
    const r2 = await t.call('POST', '/api/v1/register', {
      token: n.body.bootstrap.psk,
      body: { cluster: 'next', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
    });
    expect(r2.body.tunnel.address).toBe(address);
    expect((await t.call('DELETE', '/api/v1/clusters/gone', { token: admin })).status).toBe(404);
  });
});

describe('audit', () => {
  it('records who, what, when and from where for every change', async () => {
    const a = await t.call('GET', '/api/v1/audit?limit=1000', { token: admin });
    const actions = a.body.items.map((i: { action: string }) => i.action);
    for (const act of [
      'cluster.create',
      'cluster.register',
      'cluster.accept',
      'cluster.deny',
      'cluster.delete',
      'cluster.unjoin',
      'cluster.rotate-psk',
      'token.create',
    ]) {
      expect(actions).toContain(act);
    }
    const del = a.body.items.find((i: { action: string; target: string }) => i.action === 'cluster.delete');
    expect(del).toMatchObject({ target: 'gone', source: '127.0.0.1' });
    expect(del.actor).toMatch(/^k_[0-9a-f]{16}$/);
    // Each store row has exactly one log line and vice versa (refused changes have neither).
    expect((await t.call('POST', '/api/v1/clusters', { token: admin, body: { name: 'leasy' } })).status).toBe(
      409,
    );
    expect((await t.call('DELETE', '/api/v1/tokens/k_0000000000000000', { token: admin })).status).toBe(404);
    const rows = (await t.call('GET', '/api/v1/audit?limit=1000', { token: admin })).body.items
      .filter((i: { actor: string }) => i.actor !== 'system')
      .map((i: { action: string; target: string; actor: string }) => `${i.action} ${i.target} ${i.actor}`)
      .sort();
    const lines = t.logs.text
      .split('\n')
      .filter((l) => l.includes('"audit":'))
      .map((l) => JSON.parse(l).audit as { action: string; target: string; actor: string })
      .map((a) => `${a.action} ${a.target} ${a.actor}`)
      .sort();
    expect(lines).toEqual(rows);
  });
});

describe('restart on the same data dir', () => {
  it('keeps state, certificate and hub key; prints no new admin key', async () => {
    const pin = t.relay.caPin;
    const hub = t.relay.hubPublicKey;
    await t.restart();
    listen();
    expect(t.relay.adminKey).toBeUndefined();
    expect(t.relay.caPin).toBe(pin);
    expect(t.relay.hubPublicKey).toBe(hub);
    const list = await t.call('GET', '/api/v1/clusters', { token: admin });
    expect(list.status).toBe(200);
    expect(list.body.items.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(['leasy', 'next', 'opt-in']),
    );
  });

  it('/readyz answers 503 CLOSED when the store does not', async () => {
    const other = await startTestRelay();
    try {
      expect((await other.call('GET', '/readyz')).status).toBe(200);
      await other.relay.store.close();
      const r = await other.call('GET', '/readyz');
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('CLOSED');
    } finally {
      await other.cleanup();
    }
  });

  it('close() finishes in-flight requests and refuses new connections', async () => {
    let arrived!: () => void;
    const inHandler = new Promise<void>((r) => {
      arrived = r;
    });
    const slow = await startTestRelay({
      plugins: [
        async (app) => {
          app.get('/test/slow', async () => {
            arrived();
            await new Promise((r) => setTimeout(r, 300));
            return { done: true };
          });
        },
      ],
    });
    try {
      const inflight = slow.call('GET', '/test/slow');
      await inHandler;
      const closing = slow.relay.close();
      const r = await inflight;
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ done: true });
      await closing;
      await expect(slow.call('GET', '/healthz')).rejects.toThrow();
      await expect(slow.relay.store.ping()).rejects.toThrow(/closed/);
    } finally {
      await slow.cleanup();
    }
  });
});
