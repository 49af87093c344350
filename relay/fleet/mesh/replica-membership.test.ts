/**
 * ReplicaMembership against a real PostgreSQL (two replicas' memberships on one database): a session that comes up
 * on A is recorded and shows as connected through B's RelayHooks within a heartbeat or two (agent by agent: one
 * cluster's agents held by A and B are both counted on each); a draining agent is left out of the hop targets
 * and back in after its next run; a change made while the
 * database is down is written once it is back; a clean stop removes A and what it held.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PostgresBackend } from '../../../test/helpers/store-backends.js';
import { RelayHooks } from '../../control/model/hooks.js';
import { PostgresStore } from '../../control/store/postgres.js';
import { ReplicaMembership } from './replica-membership.js';

const backend = new PostgresBackend();
beforeAll(() => backend.start(), 120_000);
afterAll(() => backend.stop());

const log = pino({ level: 'silent' });
const audit = { at: 1, actor: 'k', action: 'c', target: 't', source: 'l', detail: {} };

describe('ReplicaMembership', () => {
  it('records sessions, shows them on the other replica, retries after an outage, and leaves cleanly', async () => {
    const connection = await backend.newDatabase();
    const storeA = await PostgresStore.open({ connection, connectTimeoutMs: 2_000 });
    const storeB = await PostgresStore.open({ connection, connectTimeoutMs: 2_000 });
    const hooksA = new RelayHooks(storeA);
    const hooksB = new RelayHooks(storeB);
    const member = (id: string, store: PostgresStore, hooks: RelayHooks) =>
      new ReplicaMembership({ id, mode: 'hub', tables: store.meshTables(), hooks, deadAfterMs: 5_000, log });
    const a = member('ra', storeA, hooksA);
    const b = member('rb', storeB, hooksB);
    try {
      for (const name of ['edge-1', 'edge-2']) {
        await storeA.createCluster(
          { name, group: 'default', displayName: name, createdAt: 1 },
          { id: `p-${name}`, hash: `h-${name}`, expiresAt: 10_000 },
          audit,
        );
      }
      await a.start('https://10.0.0.1:8443');
      await b.start('https://10.0.0.2:8443');
      hooksA.updateConnection('edge-1', { connected: true, path: 'relayed' }, 'key-edge-1');
      await vi.waitFor(
        () => expect(hooksB.connection('edge-1')).toMatchObject({ connected: true, path: 'relayed' }),
        {
          timeout: 5_000,
          interval: 100,
        },
      );
      hooksA.updateConnection('edge-1', { path: 'direct' }, 'key-edge-1');
      await vi.waitFor(() => expect(hooksB.connection('edge-1').path).toBe('direct'), {
        timeout: 5_000,
        interval: 100,
      });

      // A second agent of edge-1 held by B: each replica counts both.
      hooksB.updateConnection('edge-1', { connected: true, path: 'relayed' }, 'key-edge-1-b');
      const bothConnected = (h: RelayHooks) =>
        [...h.agentConnections('edge-1')]
          .filter(([, s]) => s.connected)
          .map(([k]) => k)
          .sort();
      await vi.waitFor(
        () => {
          expect(bothConnected(hooksA)).toEqual(['key-edge-1', 'key-edge-1-b']);
          expect(bothConnected(hooksB)).toEqual(['key-edge-1', 'key-edge-1-b']);
        },
        { timeout: 5_000, interval: 100 },
      );
      expect((await storeA.meshTables().locate('edge-1', 5_000)).map((l) => l.replica).sort()).toEqual([
        'ra',
        'rb',
      ]);
      // B's agent of edge-1 drains: it is left out of where requests hop, still shown connected; its next run
      // takes requests again.
      const hopTargets = async () =>
        (await storeA.meshTables().locate('edge-1', 5_000)).map((l) => l.publicKey);
      hooksB.emit('agent-draining', { cluster: 'edge-1', publicKey: 'key-edge-1-b', draining: true });
      await vi.waitFor(async () => expect(await hopTargets()).toEqual(['key-edge-1']), {
        timeout: 5_000,
        interval: 100,
      });
      expect(bothConnected(hooksA)).toEqual(['key-edge-1', 'key-edge-1-b']);
      hooksB.emit('agent-draining', { cluster: 'edge-1', publicKey: 'key-edge-1-b', draining: false });
      await vi.waitFor(
        async () => expect((await hopTargets()).sort()).toEqual(['key-edge-1', 'key-edge-1-b']),
        {
          timeout: 5_000,
          interval: 100,
        },
      );
      hooksB.updateConnection('edge-1', { connected: false, path: 'none' }, 'key-edge-1-b');
      await vi.waitFor(() => expect(bothConnected(hooksA)).toEqual(['key-edge-1']), {
        timeout: 5_000,
        interval: 100,
      });

      await backend.server.halt();
      hooksA.updateConnection('edge-2', { connected: true, path: 'relayed' }, 'key-edge-2');
      await new Promise((r) => setTimeout(r, 1_500));
      await backend.server.resume();
      await vi.waitFor(() => expect(hooksB.connection('edge-2').connected).toBe(true), {
        timeout: 15_000,
        interval: 200,
      });

      await a.stop();
      await vi.waitFor(() => expect(hooksB.connection('edge-1').connected).toBe(false), {
        timeout: 5_000,
        interval: 100,
      });
      expect(await storeB.meshTables().locate('edge-2', 5_000)).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
      await storeA.close();
      await storeB.close();
    }
  }, 60_000);
});
