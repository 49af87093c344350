/**
 * Abuse replay (security issue #27, item 7): a kubeconfig key outlives its cluster. Minted for cluster `edge`, it
 * must stop working when `edge` is deleted, and a new cluster created later under the same name must refuse it
 * (401), as it refuses the deleted cluster's install link and PSK. A kubeconfig key row left in the store for an
 * earlier cluster of the name (not revoked: a hand edit, or a mint that raced the deletion) is refused too: a key
 * is tied to the creation of the cluster it was minted for. Through the real `tunnel-relay serve` process; the
 * proxy answers a key it accepts with 503 AGENT_NOT_CONNECTED here (no agent), one it refuses with 401.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecret } from '../../relay/ops/secrets.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { api, type ServedRelay, serve } from './relay-fixture.js';
import { abuseRuns } from './scale.js';

let relay: ServedRelay;

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('abuse-deleted-cluster-keys-'));
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

/** A new viewer key (each run its own: a key's kubeconfig mints per minute are limited). */
async function viewerKey(): Promise<string> {
  const r = await asAdmin('POST', '/api/v1/tokens', { role: 'viewer' });
  expect(r.status).toBe(201);
  return r.body.token;
}

const asAdmin = (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) =>
  api(relay.ready.url, method, path, { token: relay.adminKey, ...(body === undefined ? {} : { body }) });

async function createCluster(name: string): Promise<{ psk: string; installUrl: string }> {
  const r = await asAdmin('POST', '/api/v1/clusters', { name });
  expect(r.status).toBe(201);
  return r.body.bootstrap;
}

async function mintKubeconfig(cluster: string, token: string): Promise<{ keyId: string; token: string }> {
  const r = await api(relay.ready.url, 'POST', `/api/v1/clusters/${cluster}/kubeconfig`, { token, body: {} });
  expect(r.status).toBe(201);
  return { keyId: r.body.keyId, token: r.body.kubeconfig.users[0].user.token };
}

/** The path proxy's answer to `token` for cluster `name`: 503 AGENT_NOT_CONNECTED means the key was accepted. */
async function proxyAnswer(name: string, token: string): Promise<{ status: number; cause: string }> {
  const r = await api(relay.ready.url, 'GET', `/api/v1/clusters/${name}/proxy/x`, { token });
  return { status: r.status, cause: r.body.details?.causes?.[0]?.reason };
}

const ACCEPTED = { status: 503, cause: 'AGENT_NOT_CONNECTED' };
const REFUSED = { status: 401, cause: 'UNAUTHENTICATED' };

describe('kubeconfig keys of a deleted cluster', () => {
  it('are revoked with it, and a new cluster of the same name refuses them', async () => {
    for (let run = 0; run < abuseRuns(1); run++) {
      const name = `edge-${run}`;
      const viewer = await viewerKey();
      const first = await createCluster(name);
      const readWrite = await mintKubeconfig(name, relay.adminKey);
      const readOnly = await mintKubeconfig(name, viewer);
      // A scoped key an admin creates with `token create` is tied to the cluster the same way.
      const created = await asAdmin('POST', '/api/v1/tokens', { role: `cluster-proxy:${name}` });
      expect(created.status).toBe(201);
      const byTokenCreate = { keyId: created.body.id, token: created.body.token };
      for (const key of [readWrite, readOnly, byTokenCreate]) {
        expect(await proxyAnswer(name, key.token)).toEqual(ACCEPTED);
      }

      expect((await asAdmin('DELETE', `/api/v1/clusters/${name}`)).status).toBe(200);
      const keys = (await asAdmin('GET', '/api/v1/tokens')).body.items as Array<{
        id: string;
        revokedAt: string;
      }>;
      for (const { keyId } of [readWrite, readOnly, byTokenCreate]) {
        expect(keys.find((k) => k.id === keyId)?.revokedAt, keyId).toEqual(expect.any(String));
      }

      await createCluster(name);
      for (const key of [readWrite, readOnly, byTokenCreate]) {
        expect(await proxyAnswer(name, key.token)).toEqual(REFUSED);
      }
      // The new cluster's own kubeconfig works; the old cluster's install link and PSK do not (checked once: the
      // refusals of one source are limited, 429 after 10).
      expect(await proxyAnswer(name, (await mintKubeconfig(name, viewer)).token)).toEqual(ACCEPTED);
      if (run > 0) continue;
      const link = await api(relay.ready.url, 'GET', new URL(first.installUrl).pathname);
      expect({ status: link.status, code: link.body.error?.code }).toEqual({
        status: 404,
        code: 'NOT_FOUND',
      });
      const register = await api(relay.ready.url, 'POST', '/api/v1/register', {
        token: first.psk,
        body: {
          cluster: name,
          publicKey: Buffer.alloc(32, 9 + run).toString('base64'),
          agentVersion: '0.1.0',
        },
      });
      expect({ status: register.status, code: register.body.error?.code }).toEqual({
        status: 401,
        code: 'BOOTSTRAP_REJECTED',
      });
    }
  });

  it('a scoped key for a cluster that does not exist cannot be created', async () => {
    const r = await asAdmin('POST', '/api/v1/tokens', { role: 'cluster-proxy:never-created' });
    expect({ status: r.status, code: r.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
  });

  it('a key row left for an earlier cluster of the name is refused: keys are tied to the cluster they were minted for', async () => {
    await createCluster('edge-stale');
    const db = new Database(join(relay.dataDir, 'relay.db'));
    db.pragma('busy_timeout = 5000');
    const stored: Record<'stale' | 'current', string> = { stale: '', current: '' };
    try {
      const { created_at: createdAt } = db
        .prepare("SELECT created_at FROM clusters WHERE name = 'edge-stale'")
        .get() as { created_at: number };
      const insert = db.prepare(
        `INSERT INTO access_keys (id, role, description, hash, created_at, expires_at, revoked_at, minted_by,
           cluster_created_at) VALUES (?, 'cluster-proxy:edge-stale', '', ?, ?, NULL, NULL, 'k_test', ?)`,
      );
      // `stale`: minted for a cluster of this name created (and deleted) before this one; `current`: for this one.
      for (const [which, boundTo] of [
        ['stale', createdAt - 60_000],
        ['current', createdAt],
      ] as const) {
        stored[which] = newSecret('accessKey');
        insert.run(
          `k_${which}`,
          createHash('sha256').update(stored[which]).digest('hex'),
          createdAt,
          boundTo,
        );
      }
    } finally {
      db.close();
    }
    expect(await proxyAnswer('edge-stale', stored.stale)).toEqual(REFUSED);
    expect(await proxyAnswer('edge-stale', stored.current)).toEqual(ACCEPTED);
  });
});
