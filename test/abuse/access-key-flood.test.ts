/**
 * Abuse replay (security issue #27, item 1): a viewer floods POST /api/v1/clusters/NAME/kubeconfig with a 1 s ttl
 * to fill the access-key cap, so that nobody can create a key any more, not even the offline recovery. Through the
 * real `tunnel-relay serve` process: past its per-minute budget the flooding key gets 429 RATE_LIMITED with
 * Retry-After (its own budget only: another viewer and the admin still mint); keys that ended, as a flood leaves
 * them (rows written straight into the relay's SQLite file), do not count against the cap, and those past their
 * retention are deleted; with the cap full of live keys, `token create` answers LIMIT_EXCEEDED and
 * `tunnel-relay admin-key create` still mints an admin key that works at once.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBECONFIG_MINTS } from '../../relay/control/api/kubeconfig-mint-limit.js';
import { ENDED_KEY_RETENTION_MS } from '../../relay/control/store/access-key-caps.js';
import { DEFAULT_STORE_LIMITS } from '../../relay/control/store/sqlite.js';
import { buildIfStale, cleanEnv, cleanup, RELAY_BIN, run, tempDir } from '../cli-harness.js';
import { api, createCluster, type ServedRelay, serve } from './relay-fixture.js';
import { abuseScale } from './scale.js';

let relay: ServedRelay;

beforeAll(async () => {
  buildIfStale();
  // The write budget (--write-budget, a separate guard replayed in audit-flood.test.ts) would cut a scaled flood
  // first; lifted here so the kubeconfig mint limit is what answers.
  relay = await serve(tempDir('abuse-key-flood-'), undefined, ['--write-budget', '1000000']);
  await createCluster(relay, 'edge');
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

const insecure = new Agent({ connect: { rejectUnauthorized: false } });

/** POST /api/v1/clusters/edge/kubeconfig with a 1 s ttl, as the flood sends it; with the Retry-After header. */
async function mint(
  token: string,
): Promise<{ status: number; retryAfter: string | undefined; text: string }> {
  const res = await request(`${relay.ready.url}/api/v1/clusters/edge/kubeconfig`, {
    method: 'POST',
    dispatcher: insecure,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ttl: '1s' }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const retryAfter = res.headers['retry-after'];
  return {
    status: res.statusCode,
    retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
    text: await res.body.text(),
  };
}

async function viewerKey(): Promise<{ id: string; token: string }> {
  const r = await api(relay.ready.url, 'POST', '/api/v1/tokens', {
    token: relay.adminKey,
    body: { role: 'viewer' },
  });
  expect(r.status).toBe(201);
  return { id: r.body.id, token: r.body.token };
}

/** `tunnel-relay token create` as the admin runs it. */
function tokenCreate() {
  return run(RELAY_BIN, ['token', 'create', '--role', 'viewer', '--output', 'json'], relay.adminEnv);
}

/** Writes `count` access-key rows straight into the relay's store, as a flood (or a hand edit) leaves them. */
function storeKeys(
  prefix: string,
  count: number,
  times: { expiresAt: number | null; revokedAt: number | null },
): void {
  const db = new Database(join(relay.dataDir, 'relay.db'));
  db.pragma('busy_timeout = 5000');
  try {
    const insert = db.prepare(
      `INSERT INTO access_keys (id, role, description, hash, created_at, expires_at, revoked_at)
         VALUES (?, 'viewer', 'stored by the test', ?, ?, ?, ?)`,
    );
    const createdAt =
      Math.min(Date.now(), times.expiresAt ?? Date.now(), times.revokedAt ?? Date.now()) - 1_000;
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        insert.run(`${prefix}${i}`, `hash-${prefix}${i}`, createdAt, times.expiresAt, times.revokedAt);
      }
    })();
  } finally {
    db.close();
  }
}

function keyRows(where: string): number {
  const db = new Database(join(relay.dataDir, 'relay.db'), { readonly: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM access_keys WHERE ${where}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('a flood of short kubeconfig keys', () => {
  it('is cut at the minting key budget with 429 and Retry-After; other keys still mint', async () => {
    const flooder = await viewerKey();
    const sent = 3 * KUBECONFIG_MINTS.max * abuseScale();
    const answers: Array<Awaited<ReturnType<typeof mint>>> = [];
    for (let done = 0; done < sent; done += 20) {
      answers.push(
        ...(await Promise.all(Array.from({ length: Math.min(20, sent - done) }, () => mint(flooder.token)))),
      );
    }
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(KUBECONFIG_MINTS.max);
    expect(statuses.filter((s) => s === 429)).toHaveLength(sent - KUBECONFIG_MINTS.max);
    for (const refused of answers.filter((a) => a.status === 429)) {
      const seconds = Number(refused.retryAfter);
      expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= KUBECONFIG_MINTS.windowMs / 1000).toBe(
        true,
      );
      const body = JSON.parse(refused.text);
      expect(body.error.code).toBe('RATE_LIMITED');
      expect(body.error.message).toContain(
        `access key ${flooder.id} minted ${KUBECONFIG_MINTS.max} kubeconfigs within 60 s`,
      );
      expect(refused.text).not.toContain(flooder.token);
    }
    // The budget is the flooding key's own: another viewer, and the admin past the same count, still mint.
    expect((await mint((await viewerKey()).token)).status).toBe(201);
    for (let i = 0; i <= KUBECONFIG_MINTS.max; i++) expect((await mint(relay.adminKey)).status).toBe(201);
    const created = await tokenCreate();
    expect(created.code, created.stderr).toBe(0);
  });

  it('leaves ended keys that do not count against the cap, deleted after their retention', async () => {
    const now = Date.now();
    // What the flood leaves once its keys expired: as many ended keys as the cap, and some past the retention.
    storeKeys('expired-', DEFAULT_STORE_LIMITS.maxAccessKeys, { expiresAt: now - 1_000, revokedAt: null });
    storeKeys('revoked-', 50, { expiresAt: null, revokedAt: now - 1_000 });
    storeKeys('old-', 50, { expiresAt: now - ENDED_KEY_RETENTION_MS - 60_000, revokedAt: null });
    const created = await tokenCreate();
    expect(created.code, created.stderr).toBe(0);
    expect(keyRows("id LIKE 'old-%'")).toBe(0);
    expect(keyRows('revoked_at IS NOT NULL OR expires_at <= ' + Date.now())).toBeLessThanOrEqual(
      DEFAULT_STORE_LIMITS.maxEndedAccessKeys,
    );
  });

  it('with the cap full of live keys: token create is refused, the offline admin-key create is not', async () => {
    const live = keyRows(
      `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${Date.now() + 60_000})`,
    );
    storeKeys('live-', DEFAULT_STORE_LIMITS.maxAccessKeys - live, { expiresAt: null, revokedAt: null });
    const refused = await api(relay.ready.url, 'POST', '/api/v1/tokens', {
      token: relay.adminKey,
      body: { role: 'viewer' },
    });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
      status: 429,
      code: 'LIMIT_EXCEEDED',
    });
    expect(refused.body.error.message).toContain(`${DEFAULT_STORE_LIMITS.maxAccessKeys} live`);
    const recovery = await run(
      RELAY_BIN,
      ['admin-key', 'create', '--data-dir', relay.dataDir, '--output', 'json'],
      cleanEnv(),
    );
    expect(recovery.code, recovery.stderr).toBe(0);
    const minted = JSON.parse(recovery.stdout);
    const whoami = await api(relay.ready.url, 'GET', '/api/v1/whoami', { token: minted.token });
    expect({ status: whoami.status, role: whoami.body.role }).toEqual({ status: 200, role: 'admin' });
  });
});
