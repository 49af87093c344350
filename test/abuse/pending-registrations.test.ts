/**
 * Attack replay against the real `tunnel-relay serve`: a leaked org-wide bootstrap key registers a new Pending
 * cluster under a fresh name as fast as it can, each with the most claims an agent may send, to fill the relay's
 * store and the cluster list every operator reads. The relay must stop it at the per-key cap and, across keys, at
 * the relay-wide cap (429 LIMIT_EXCEEDED naming the setting), write no audit row for the refusals, keep accepting
 * an operator's `cluster create`, and let the key register again once its clusters are decided. The caps are set
 * small (`--max-pending-per-key`, `--max-pending-registrations`) and scaled with ABUSE_SCALE.
 */
import { describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { serveForFile } from '../helpers/served-relay.js';
import { api } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const scale = abuseScale();
const PER_KEY = 20 * scale;
const IN_ALL = 30 * scale;
/** Registrations in flight at once. */
const CONCURRENCY = 8;

const relay = serveForFile({
  prefix: 'abuse-pending',
  args: [
    '--max-pending-per-key',
    String(PER_KEY),
    '--max-pending-registrations',
    String(IN_ALL),
    '--write-budget',
    '1000000',
  ],
});

const url = () => relay.ready.url;
const admin = () => relay.adminEnv.TUNNEL_ACCESS_KEY!;
/** The most claims an agent may send (shared/api/claim-limits.ts): 20 of 1 KiB. */
const claims = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`claim-${i}`, 'x'.repeat(1024)]));

async function bootstrapKey(): Promise<{ id: string; token: string }> {
  const r = await api(url(), 'POST', '/api/v1/tokens', { token: admin(), body: { role: 'bootstrap' } });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

type Reply = Awaited<ReturnType<typeof api>>;

function register(token: string, cluster: string): Promise<Reply> {
  return api(url(), 'POST', '/api/v1/register', {
    token,
    body: { cluster, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0', claims },
  });
}

/** Registers `names` with `token`, CONCURRENCY at a time; the status of each, by name. */
async function flood(token: string, names: string[]): Promise<Map<string, Reply>> {
  const out = new Map<string, Reply>();
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++]!;
      out.set(name, await register(token, name));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return out;
}

function split(results: Map<string, Reply>) {
  const ok = [...results].filter(([, r]) => r.status === 201);
  const refused = [...results].filter(([, r]) => r.status !== 201);
  return { ok, refused };
}

async function auditRows(actor: string): Promise<Array<{ action: string; target: string }>> {
  const rows: Array<{ action: string; target: string }> = [];
  let cont: string | undefined;
  do {
    const q = `actor=${encodeURIComponent(actor)}&limit=1000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await api(url(), 'GET', `/api/v1/audit?${q}`, { token: admin() });
    expect(r.status, r.text).toBe(200);
    rows.push(...r.body.items);
    cont = r.body.continue;
  } while (cont !== undefined);
  return rows;
}

describe('a bootstrap key flooding the relay with Pending clusters', () => {
  it('stops at the per-key cap, then at the relay-wide cap; operators and decided clusters go on', async () => {
    const a = await bootstrapKey();
    const namesA = Array.from({ length: PER_KEY + 10 }, (_, i) => `flood-a-${i}`);
    const { ok, refused } = split(await flood(a.token, namesA));
    expect(ok).toHaveLength(PER_KEY);
    expect(ok.every(([, r]) => r.body.status === 'Pending')).toBe(true);
    expect(refused).toHaveLength(10);
    for (const [, r] of refused) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.body.error.message).toContain(`bootstrap:${a.id} already has ${PER_KEY} Pending clusters`);
      expect(r.body.error.message).toContain('--max-pending-per-key');
    }
    // Refusals are not audited one by one (they would push real rows out); each registration is.
    const rowsA = await auditRows(`bootstrap:${a.id}`);
    expect(rowsA.filter((r) => r.action === 'cluster.register')).toHaveLength(PER_KEY);
    expect(rowsA).toHaveLength(PER_KEY);

    // A second key fills what is left of the relay-wide cap.
    const b = await bootstrapKey();
    const room = IN_ALL - PER_KEY;
    const byB = split(
      await flood(
        b.token,
        Array.from({ length: room + 5 }, (_, i) => `flood-b-${i}`),
      ),
    );
    expect(byB.ok).toHaveLength(room);
    expect(byB.refused).toHaveLength(5);
    for (const [, r] of byB.refused) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('LIMIT_EXCEEDED');
      expect(r.body.error.message).toContain(`the relay already holds ${IN_ALL} Pending clusters`);
      expect(r.body.error.message).toContain('--max-pending-registrations');
    }

    // An operator's cluster is not a registration: created as ever.
    const op = await api(url(), 'POST', '/api/v1/clusters', {
      token: admin(),
      body: { name: 'operator-made' },
    });
    expect(op.status, op.text).toBe(201);
    const [firstName] = ok[0]!;
    const pendingList = await api(url(), 'GET', '/api/v1/clusters?status=Pending&limit=500', {
      token: admin(),
    });
    expect(pendingList.body.items.filter((c: { name: string }) => c.name.startsWith('flood-'))).toHaveLength(
      Math.min(IN_ALL, 500),
    );

    // Deciding a cluster frees its place, for its key and in all.
    const denied = await api(url(), 'POST', `/api/v1/clusters/${firstName}/deny`, { token: admin() });
    expect(denied.status, denied.text).toBe(200);
    expect((await register(a.token, 'flood-a-again')).status).toBe(201);
    expect((await register(a.token, 'flood-a-more')).status).toBe(429);
  });
});
