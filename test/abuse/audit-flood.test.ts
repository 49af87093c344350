/**
 * Attack replay against the real `tunnel-relay serve`: a group-editor key writes to its own clusters as fast as it
 * can to push the audit log's real rows out of the bounded table (1,400-1,700 rows a second erased the 100,000-row
 * log in about a minute). The relay must stop the key at its write budget (429 RATE_LIMITED with Retry-After,
 * naming --write-budget, no audit row for the refusals) without slowing other keys or the key's reads; and a flood
 * past --audit-max-rows (here by a key with a large budget) must keep every row younger than --audit-retention,
 * say so in a warning and a metric, and serve them all through the paged audit API, each once.
 */
import { describe, expect, it } from 'vitest';
import { serveForFile } from '../helpers/served-relay.js';
import { api } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const scale = abuseScale();
/** The budgeted relay's writes per minute per key. */
const BUDGET = 30 * scale;
/** Rows the capped relay's flood writes: past twice --audit-max-rows, so prunes run over young rows. */
const FLOOD_ROWS = 2_000 + 100 * scale;
const CONCURRENCY = 8;

const budgeted = serveForFile({ prefix: 'abuse-audit-budget', args: ['--write-budget', String(BUDGET)] });
const capped = serveForFile({
  prefix: 'abuse-audit-cap',
  args: ['--audit-max-rows', '1000', '--write-budget', '1000000'],
});

type Reply = Awaited<ReturnType<typeof api>>;
type Relay = typeof budgeted;

const adminOf = (relay: Relay) => relay.adminEnv.TUNNEL_ACCESS_KEY!;

/** Runs `count` calls of `call`, CONCURRENCY at a time; their replies in order of the calls. */
async function flood(count: number, call: (i: number) => Promise<Reply>): Promise<Reply[]> {
  const out: Reply[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      out[i] = await call(i);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return out;
}

/** Every audit row `query` selects, following `continue`. */
async function auditRows(
  relay: Relay,
  query: string,
): Promise<Array<{ id: number; actor: string; action: string }>> {
  const rows: Array<{ id: number; actor: string; action: string }> = [];
  let cont: string | undefined;
  do {
    const page = `/api/v1/audit?limit=1000${query}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await api(relay.ready.url, 'GET', page, { token: adminOf(relay) });
    expect(r.status, r.text).toBe(200);
    rows.push(...r.body.items);
    cont = r.body.continue;
  } while (cont !== undefined);
  return rows;
}

describe('a write flood against the audit log', () => {
  it("stops a group-editor at its write budget; other keys and the editor's reads go on", async () => {
    const url = budgeted.ready.url;
    const admin = adminOf(budgeted);
    const created = await api(url, 'POST', '/api/v1/clusters', {
      token: admin,
      body: { name: 'own', group: 'team' },
    });
    expect(created.status, created.text).toBe(201);
    const key = await api(url, 'POST', '/api/v1/tokens', {
      token: admin,
      body: { role: 'group-editor:team' },
    });
    expect(key.status, key.text).toBe(201);
    const editor = key.body.token as string;
    const started = Date.now();
    const replies = await flood(BUDGET + 20, (i) =>
      api(url, 'PUT', '/api/v1/clusters/own/values', { token: editor, body: { n: i } }),
    );
    const elapsedMs = Date.now() - started;
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    // The bucket holds BUDGET and refills BUDGET a minute: what the flood's time let in at most.
    expect(ok.length).toBeGreaterThanOrEqual(BUDGET);
    expect(ok.length).toBeLessThanOrEqual(BUDGET + Math.ceil((elapsedMs * BUDGET) / 60_000) + 1);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('RATE_LIMITED');
      expect(r.body.error.message).toContain(`access key ${key.body.id} used its write budget of ${BUDGET}`);
      expect(r.body.error.message).toContain('--write-budget');
    }
    // One row per write that happened, none for the refusals.
    const rows = await auditRows(budgeted, `&actor=${key.body.id}`);
    expect(rows.filter((r) => r.action === 'values.set')).toHaveLength(ok.length);
    // Reads are not writes; another key has its own budget.
    expect((await api(url, 'GET', '/api/v1/clusters', { token: editor })).status).toBe(200);
    const byAdmin = await api(url, 'PUT', '/api/v1/clusters/own/values', {
      token: admin,
      body: { by: 'admin' },
    });
    expect(byAdmin.status, byAdmin.text).toBe(200);
  });

  it('keeps every row younger than the retention past --audit-max-rows, and says so', async () => {
    const url = capped.ready.url;
    const admin = adminOf(capped);
    const created = await api(url, 'POST', '/api/v1/clusters', { token: admin, body: { name: 'noisy' } });
    expect(created.status, created.text).toBe(201);
    const before = await auditRows(capped, '');
    const replies = await flood(FLOOD_ROWS, (i) =>
      api(url, 'PUT', '/api/v1/clusters/noisy/values', { token: admin, body: { n: i } }),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const rows = await auditRows(capped, '');
    // Every row, each once, newest first: the first rows written (the cluster's creation among them) too.
    expect(rows).toHaveLength(before.length + FLOOD_ROWS);
    const ids = rows.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(rows.at(-1)!.id).toBe(before.at(-1)!.id);
    expect(rows.filter((r) => r.action === 'cluster.create')).toHaveLength(1);
    await capped.proc.waitFor(
      (p) => p.stderr.includes('rows past --audit-max-rows are kept because they are younger'),
      10_000,
      'the audit over-cap warning',
    );
    const metrics = await api(url, 'GET', '/metrics');
    const over = /^tunnel_relay_audit_rows_over_cap (\d+)$/m.exec(metrics.text);
    expect(Number(over?.[1])).toBeGreaterThan(0);
  });
});
