/**
 * reachableHop on a real PostgreSQL and real sockets: a replica killed moments ago still has a fresh heartbeat and
 * the cluster's agent locations in the store, and nothing listens at its mesh URL. A request for the cluster must
 * not fail MESH_UNREACHABLE on it: the refused replica is left out and the hop chosen again (another replica's
 * agent of the cluster, or this replica when none is left).
 */
import { IncomingMessage } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, Socket } from 'node:net';
import { createServer, type Server } from 'node:tls';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { pinOfCertificate } from '../../../shared/tls-pin.js';
import { PostgresBackend } from '../../../test/helpers/store-backends.js';
import { makeSelfSignedCert } from '../../../test/helpers/test-cert.js';
import { RelayHooks } from '../../control/model/hooks.js';
import { PostgresStore } from '../../control/store/postgres.js';
import type { ClusterRecord } from '../../control/store/types.js';
import { MeshKey } from '../../ops/config/mesh-settings.js';
import { dialReplica, isRefusal } from './mesh-dial.js';
import { MeshNode } from './mesh-node.js';
import { type MeshRouting, MeshTurns, reachableHop } from './mesh-routing.js';

const backend = new PostgresBackend();
const cert = makeSelfSignedCert('localhost');
let live: Server;
let liveUrl: string;
let deadUrl: string;

beforeAll(async () => {
  await backend.start();
  live = createServer({ key: cert.key, cert: cert.cert }, (s) => s.end('hi'));
  await new Promise<void>((r) => live.listen(0, '127.0.0.1', r));
  liveUrl = `https://127.0.0.1:${(live.address() as AddressInfo).port}`;
  // A port that was listening a moment ago and is closed now: what a replica killed with -9 leaves.
  const gone = createTcpServer();
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
  deadUrl = `https://127.0.0.1:${(gone.address() as AddressInfo).port}`;
  await new Promise<void>((r) => gone.close(() => r()));
}, 120_000);
afterAll(async () => {
  await new Promise<void>((r) => live.close(() => r()));
  await backend.stop();
});

const audit = { at: 1, actor: 'k', action: 'c', target: 't', source: 'l', detail: {} };

/** A store with cluster `edge` and the replicas `rd` (dead) and `rl` (live); this replica's node and routing. */
async function fleet(): Promise<{
  store: PostgresStore;
  node: MeshNode;
  routing: MeshRouting;
  c: ClusterRecord;
}> {
  const store = await PostgresStore.open({
    connection: await backend.newDatabase(),
    connectTimeoutMs: 2_000,
  });
  await store.createCluster(
    { name: 'edge', group: 'default', displayName: 'edge', createdAt: 1 },
    { id: 'p-edge', hash: 'h-edge', expiresAt: 10_000 },
    audit,
  );
  const tables = store.meshTables();
  await tables.join({ id: 'rd', meshUrl: deadUrl, mode: 'hub' }, 60_000);
  await tables.join({ id: 'rl', meshUrl: liveUrl, mode: 'hub' }, 60_000);
  const node = new MeshNode({
    tables,
    config: { url: null, key: new MeshKey(Buffer.alloc(32, 7)), deadAfterMs: 60_000 },
    caPin: pinOfCertificate(cert.der),
    hooks: new RelayHooks(store),
    log: pino({ level: 'silent' }),
  });
  const routing: MeshRouting = {
    node,
    stats: node.stats,
    localAgents: async () => 'none',
    arrivalWaitMs: () => 0,
    turns: new MeshTurns(),
  };
  const c = { ...(await store.getCluster('edge'))!, publicKey: 'k-primary' };
  return { store, node, routing, c };
}

const clientRequest = () => new IncomingMessage(new Socket());

describe('reachableHop', () => {
  it("moves past a replica that refuses the connection to another one's agent of the cluster", async () => {
    const { store, node, routing, c } = await fleet();
    try {
      // The dead replica's agent is the oldest location, so the turn names it first.
      await store
        .meshTables()
        .setLocation({ cluster: 'edge', publicKey: 'k1', replica: 'rd', path: 'relayed' });
      await store
        .meshTables()
        .setLocation({ cluster: 'edge', publicKey: 'k2', replica: 'rl', path: 'direct' });
      expect((await node.locate('edge')).map((l) => l.replica)).toEqual(['rd', 'rl']);
      const hop = await reachableHop(routing, 'client', c, clientRequest());
      expect(hop).not.toBeNull();
      const peer = await hop!.dial();
      const answer = await new Promise<string>((resolve) => {
        let got = '';
        peer.on('data', (d: Buffer) => {
          got += d.toString();
        });
        peer.on('end', () => resolve(got));
      });
      expect(answer).toBe('hi');
      peer.destroy();
      expect(node.stats.failed).toBe(1);
      // Left out from then on: the next request goes to the live replica at once.
      expect((await node.locate('edge')).map((l) => l.replica)).toEqual(['rl']);
    } finally {
      await store.close();
    }
  });

  it('serves here when the refused replica held the only agent of the cluster', async () => {
    const { store, node, routing, c } = await fleet();
    try {
      await store
        .meshTables()
        .setLocation({ cluster: 'edge', publicKey: 'k1', replica: 'rd', path: 'relayed' });
      expect(await reachableHop(routing, 'client', c, clientRequest())).toBeNull();
      expect(node.stats.failed).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('names a refusal as such, and no other failure', async () => {
    const refused = await dialReplica(
      { meshUrl: deadUrl, cluster: 'edge' },
      pinOfCertificate(cert.der),
    ).catch((e: unknown) => e);
    expect(isRefusal(refused)).toBe(true);
    const otherPin = await dialReplica(
      { meshUrl: liveUrl, cluster: 'edge' },
      `sha256:${'0'.repeat(64)}`,
    ).catch((e: unknown) => e);
    expect(isTunnelError(otherPin, 'MESH_UNREACHABLE')).toBe(true);
    expect(isRefusal(otherPin)).toBe(false);
    expect(isRefusal(new Error('connect ECONNREFUSED'))).toBe(false);
  });
});
