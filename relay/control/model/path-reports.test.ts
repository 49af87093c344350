import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { SqliteStore } from '../store/sqlite.js';
import type { ConnectionStatus } from './hooks.js';
import { PATH_REPORT_REFRESH_MS, PathReports } from './path-reports.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'path-reports-'));
  dirs.push(dir);
  const store = new SqliteStore(join(dir, 'relay.db'));
  const audit = { at: 1, actor: 't', action: 'c', target: 'c', source: 'l', detail: {} };
  for (const name of ['a', 'b'])
    await store.createCluster(
      { name, group: 'g', displayName: name, createdAt: 1 },
      { id: `p-${name}`, hash: `h-${name}`, expiresAt: 10 },
      audit,
    );
  const clock = new FakeClock();
  const reports = new PathReports({ store, clock, maxAgents: 10 });
  const row = async (cluster: string) => (await store.agentPaths(cluster))[0];
  const settle = () => new Promise((r) => setImmediate(r));
  return { store, clock, reports, row, settle };
}

const status = (over: Partial<ConnectionStatus> = {}): ConnectionStatus => ({
  connected: true,
  path: 'direct',
  lastHandshake: 1,
  rttMs: 1,
  bytesIn: 0,
  bytesOut: 0,
  pathDetail: { remote: '192.0.2.9:4000', rttDirectMs: 10, rttRelayedMs: 20, lastSwitch: 5, reason: null },
  ...over,
});

describe('PathReports', () => {
  it('writes on a change, an RTT moving by a quarter, or the refresh; not on every status tick', async () => {
    const { clock, reports, row, settle, store } = await setup();
    reports.note('a', status());
    await settle();
    const first = await row('a');
    expect(first).toMatchObject({ path: 'direct', remote: '192.0.2.9:4000', rttDirectMs: 10, reason: null });
    clock.advance(2_000);
    reports.note('a', status({ pathDetail: { ...status().pathDetail!, rttDirectMs: 11 } }));
    await settle();
    expect((await row('a'))?.reportedAt).toBe(first?.reportedAt);
    reports.note('a', status({ pathDetail: { ...status().pathDetail!, rttDirectMs: 14 } }));
    await settle();
    expect((await row('a'))?.rttDirectMs).toBe(14);
    const relayed = {
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: 20,
      lastSwitch: 9,
      reason: 'direct-silent',
    };
    reports.note('a', status({ path: 'relayed', pathDetail: relayed }));
    await settle();
    expect(await row('a')).toMatchObject({ path: 'relayed', reason: 'direct-silent', lastSwitchAt: 9 });
    const before = (await row('a'))?.reportedAt ?? 0;
    clock.advance(PATH_REPORT_REFRESH_MS);
    reports.note('a', status({ path: 'relayed', pathDetail: relayed }));
    await settle();
    expect((await row('a'))?.reportedAt).toBe(before + PATH_REPORT_REFRESH_MS);
    await store.close();
  });

  it('writes none only for an agent it had connected; forget writes none', async () => {
    const { reports, row, settle, store } = await setup();
    // Another replica may hold b's session: this hub's "not connected" is not written.
    reports.note('b', status({ connected: false, path: 'none', pathDetail: null }));
    await settle();
    expect(await row('b')).toBeUndefined();
    reports.note('a', status());
    await settle();
    reports.note('a', status({ connected: false, path: 'none', pathDetail: null }));
    await settle();
    expect(await row('a')).toMatchObject({ path: 'none', remote: null, rttDirectMs: null });
    reports.note('b', status());
    await settle();
    reports.forget('b');
    await settle();
    expect(await row('b')).toMatchObject({ path: 'none' });
    await store.close();
  });
});
