/**
 * Two real `tunnel-relay serve` processes sharing one throw-away PostgreSQL (test/helpers/postgres.ts),
 * as two replicas behind a load balancer: the first start mints the admin key once, a cluster created
 * on one is served by the other, and the same PSK sent to both at once joins exactly once.
 */
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { buildIfStale, CLIENT_BIN, cleanEnv, cleanup, Proc, RELAY_BIN, run, tempDir } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { freePort } from './helpers/tinyproxy.js';

let fleet: ReplicaFleet;
let replicas: Replica[];
let adminKey: string;

function call(
  r: Replica,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(path, r.ready.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: fleet.files.caPem,
        timeout: 10_000,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => {
          const isJson = (res.headers['content-type'] ?? '').startsWith('application/json');
          resolve({ status: res.statusCode ?? 0, body: isJson && text ? JSON.parse(text) : { text } });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('pg-replica');
  // Every replica serves the fleet's one certificate and hub key (a replica with others refuses to start).
  await fleet.startReplica({ mesh: false });
  await fleet.startReplica({ mesh: false });
  replicas = fleet.replicas;
  adminKey = fleet.adminKey();
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
  await cleanup();
  await cleanupAll();
});

describe('two relay replicas on one PostgreSQL', () => {
  it('mints the first admin key once, and never logs the store password', () => {
    expect(adminKey).toMatch(/^trk_/);
    expect(replicas[1]!.ready.adminKey).toBeUndefined();
    for (const r of replicas) {
      expect(r.proc.stderr).toContain('store: PostgreSQL');
      expect(r.proc.stderr + r.proc.stdout).not.toContain(fleet.postgres.password);
    }
  });

  it('a cluster created on one replica is served by the other', async () => {
    const [a, b] = replicas;
    const created = await call(a!, 'POST', '/api/v1/clusters', adminKey, { name: 'made-on-a' });
    expect(created.status).toBe(201);
    const got = await call(b!, 'GET', '/api/v1/clusters/made-on-a', adminKey);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ name: 'made-on-a' });
  });

  it('the same PSK sent to both replicas at once joins exactly once', async () => {
    const [a, b] = replicas;
    for (let round = 0; round < 8; round++) {
      const name = `race-${round}`;
      const created = await call(a!, 'POST', '/api/v1/clusters', adminKey, { name });
      expect(created.status).toBe(201);
      const psk = (created.body.bootstrap as { psk: string }).psk;
      const register = (r: Replica) =>
        call(r, 'POST', '/api/v1/register', psk, {
          cluster: name,
          publicKey: keyToBase64(generateKeyPair().publicKey),
          agentVersion: '0.1.0',
        });
      const results = await Promise.all([register(a!), register(b!)]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 401]);
      const refused = results.find((r) => r.status !== 201)!;
      expect(refused.body).toMatchObject({ error: { code: 'BOOTSTRAP_REJECTED' } });
      const joined = results.find((r) => r.status === 201)!;
      expect(joined.body).toMatchObject({ cluster: name, status: 'Accepted' });
    }
  });
});

describe('failed registrations from one source, spread over both replicas', () => {
  it('reach the limit on both together; clearing it on one clears it on both', async () => {
    const [a, b] = replicas;
    expect((await call(a!, 'DELETE', '/api/v1/rate-limits?all=true', adminKey)).status).toBe(200);
    const wrongPsk = `tpsk_${'x'.repeat(43)}`;
    const refused = async (r: Replica) =>
      (
        await call(r, 'POST', '/api/v1/register', wrongPsk, {
          cluster: 'nobody',
          publicKey: keyToBase64(generateKeyPair().publicKey),
          agentVersion: '0.1.0',
        })
      ).status;
    for (let i = 0; i < 10; i++) expect(await refused(i % 2 === 0 ? a! : b!)).toBe(401);
    expect(await refused(a!)).toBe(429);
    expect(await refused(b!)).toBe(429);
    const listed = await call(b!, 'GET', '/api/v1/rate-limits', adminKey);
    expect(listed.body.items).toEqual([
      expect.objectContaining({ source: '127.0.0.1', failures: 10, limited: true }),
    ]);
    expect((await call(b!, 'DELETE', '/api/v1/rate-limits?source=127.0.0.1', adminKey)).status).toBe(200);
    expect(await refused(a!)).toBe(401);
  });
});

describe('admin-key create on a PostgreSQL store', () => {
  it('mints a key every replica accepts at once; an empty database is refused, not filled', async () => {
    const created = await run(
      RELAY_BIN,
      [
        'admin-key',
        'create',
        '--store',
        fleet.store.url,
        '--store-password-file',
        fleet.store.passwordFile,
        '--output',
        'json',
      ],
      cleanEnv(),
    );
    expect(created.code, created.stderr).toBe(0);
    const { token } = JSON.parse(created.stdout) as { token: string };
    for (const r of replicas) expect((await call(r, 'GET', '/api/v1/clusters', token)).status).toBe(200);
    const empty = await fleet.postgres.createDatabase('empty_relay');
    const emptyUrl = `postgres://${empty.target.user}@${empty.target.host}:${empty.target.port}/empty_relay`;
    const refused = await run(
      RELAY_BIN,
      ['admin-key', 'create', '--store', emptyUrl, '--store-password-file', fleet.store.passwordFile],
      cleanEnv(),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`error BAD_CONFIG: store: there is no relay store in ${emptyUrl}`);
  });
});

describe('an agent on one replica, its cluster denied on the other', () => {
  it('is disconnected by the replica it is connected to within a second or two', async () => {
    const [a, b] = replicas;
    const name = 'edge-on-b';
    const created = await call(a!, 'POST', '/api/v1/clusters', adminKey, { name });
    const psk = (created.body.bootstrap as { psk: string }).psk;
    const stateDir = join(tempDir('pg-agent-'), 'state');
    const joined = await run(
      CLIENT_BIN,
      [
        'join',
        '--relay',
        b!.ready.url,
        '--cluster',
        name,
        '--psk',
        psk,
        '--ca-pin',
        b!.ready.caPin,
        '--state-dir',
        stateDir,
        '--wait',
      ],
      cleanEnv(),
    );
    expect(joined.code, joined.stderr).toBe(0);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    try {
      const connectedOnB = async () =>
        (await call(b!, 'GET', `/api/v1/clusters/${name}`, adminKey)).body.connected;
      await vi.waitFor(async () => expect(await connectedOnB()).toBe(true), {
        timeout: 20_000,
        interval: 200,
      });
      expect((await call(a!, 'POST', `/api/v1/clusters/${name}/deny`, adminKey)).status).toBe(200);
      const denied = Date.now();
      await vi.waitFor(async () => expect(await connectedOnB()).toBe(false), {
        timeout: 2_000,
        interval: 50,
      });
      expect(Date.now() - denied).toBeLessThan(2_000);
      // It stays cut off: its reconnects are refused while the cluster is Denied.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await connectedOnB()).toBe(false);
    } finally {
      await agent.stop('SIGTERM');
    }
  }, 60_000);
});

describe('two relay replicas while PostgreSQL restarts', () => {
  it('are not ready while the server is down, and serve again once it is back', async () => {
    const [a, b] = replicas;
    await fleet.postgres.halt();
    try {
      await vi.waitFor(async () => expect((await call(a!, 'GET', '/readyz', '')).status).toBe(503), {
        timeout: 15_000,
        interval: 200,
      });
      const failed = await call(b!, 'POST', '/api/v1/clusters', adminKey, { name: 'while-down' });
      expect(failed.status).toBeGreaterThanOrEqual(500);
    } finally {
      await fleet.postgres.resume();
    }
    for (const r of replicas) {
      await vi.waitFor(async () => expect((await call(r, 'GET', '/readyz', '')).status).toBe(200), {
        timeout: 15_000,
        interval: 200,
      });
    }
    expect((await call(b!, 'POST', '/api/v1/clusters', adminKey, { name: 'after-restart' })).status).toBe(
      201,
    );
    expect((await call(a!, 'GET', '/api/v1/clusters/after-restart', adminKey)).status).toBe(200);
    for (const r of replicas) {
      expect(r.proc.stderr).toContain('change notifications lost');
      expect(r.proc.stderr + r.proc.stdout).not.toContain(fleet.postgres.password);
    }
  });
});

describe('serve --store postgres:// that cannot start', () => {
  it('exits with BAD_CONFIG naming the server, never the password', async () => {
    const port = await freePort();
    const started = Date.now();
    const r = await run(
      RELAY_BIN,
      [
        'serve',
        '--data-dir',
        tempDir('pg-down-'),
        '--listen',
        '127.0.0.1:0',
        '--udp-port',
        'off',
        '--stun-port',
        'off',
        '--store',
        `postgres://relay@127.0.0.1:${port}/relaydb`,
      ],
      cleanEnv({ TUNNEL_RELAY_STORE_PASSWORD: 'pw-never-shown-42' }),
      30_000,
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('BAD_CONFIG');
    expect(r.stderr).toContain(`postgres://relay@127.0.0.1:${port}/relaydb`);
    expect(r.stderr + r.stdout).not.toContain('pw-never-shown-42');
  });

  it('a wrong password: BAD_CONFIG, and the wrong password is not echoed', async () => {
    const r = await run(
      RELAY_BIN,
      [
        'serve',
        '--data-dir',
        tempDir('pg-badpw-'),
        '--listen',
        '127.0.0.1:0',
        '--udp-port',
        'off',
        '--stun-port',
        'off',
        '--store',
        fleet.store.url,
      ],
      cleanEnv({ TUNNEL_RELAY_STORE_PASSWORD: 'wrong-pw-never-shown-43' }),
      30_000,
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/BAD_CONFIG.*password authentication failed/);
    expect(r.stderr + r.stdout).not.toContain('wrong-pw-never-shown-43');
  });
});
