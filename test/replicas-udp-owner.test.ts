/**
 * One owner per session on a fleet's UDP ports, with real processes: two `tunnel-relay serve` replicas on one
 * throw-away PostgreSQL (helpers/replica-fleet.ts), each with its own `--udp-port`, on the host side of a veth, and
 * the real wireguard-go as a stock WireGuard peer in a network namespace, registered as a cluster's agent (B starts
 * after the registration, so both replicas hold it as a peer). Pointed
 * at replica A's UDP port its handshake completes and A answers its pings (A holds its session, and the mesh tells
 * B). Pointed at B's UDP port (a fresh handshake) it gets no answer at all: B sends nothing and counts the
 * datagrams as `not-owner`. Pointed back at A, A answers again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADDRESS } from '../relay/control/store/addresses.js';
import { api, type ServedRelay } from './abuse/relay-fixture.js';
import { buildIfStale, cleanEnv, cleanup, freeUdpPort } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { waitFor } from './helpers/wait.js';
import { startWireguardGo, type WireguardGoHandle } from './helpers/wireguard-go.js';
import { metrics, registerPeer, type Tunnel, udpCounter } from './hub-udp-fixture.js';

const CLUSTER = 'stock-owner';

let ns: Netns;
let base: ReplicaFleet;
let replicas: (ServedRelay & { udpPort: number })[];
let tunnel: Tunnel;
let wg: WireguardGoHandle;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'wg', 'wireguard-go', 'ping']);
  buildIfStale();
  ns = await createNetns('fown', { subnet: 'auto' });
  const host = ns.hostAddress!;
  base = await startReplicaFleet('udp-owner', { altNames: [host] });
  replicas = [];
  const start = async () => {
    const udpPort = await freeUdpPort(host);
    const { proc, ready } = await base.startReplica({
      listen: `${host}:0`,
      extraArgs: ['--udp-port', String(udpPort)],
    });
    const adminKey = base.adminKey();
    const adminEnv = cleanEnv({ TUNNEL_RELAY_URL: ready.url, TUNNEL_ACCESS_KEY: adminKey });
    replicas.push({ proc, ready, dataDir: '', adminEnv, adminKey, udpPort });
  };
  await start();
  const reg = await registerPeer(replicas[0]!, CLUSTER);
  tunnel = reg.tunnel;
  // B starts after the registration, so it holds the peer too (every replica holds every accepted agent).
  await start();
  wg = await startWireguardGo(ns, {
    privateKey: reg.keys.privateKey,
    listenPort: 51820,
    address: tunnel.address.replace(/\/32$/, '/10'),
    peers: [peerAt(replicas[0]!.udpPort)],
  });
}, 120_000);

afterAll(async () => {
  await wg?.stop();
  await base?.stop();
  await cleanup();
  await cleanupAll();
});

function peerAt(udpPort: number) {
  return {
    publicKey: Buffer.from(tunnel.hubPublicKey, 'base64'),
    presharedKey: Buffer.from(tunnel.presharedKey, 'base64'),
    endpoint: `${ns.hostAddress}:${udpPort}`,
    allowedIps: [`${HUB_ADDRESS}/32`],
  };
}

/** Points wireguard-go's peer at `udpPort` with no session (removed and added again: a fresh handshake). */
async function pointAt(udpPort: number): Promise<void> {
  await wg.set({ peers: [{ publicKey: Buffer.from(tunnel.hubPublicKey, 'base64'), remove: true }] });
  await wg.set({ peers: [peerAt(udpPort)] });
}

/** The number of echo replies to `count` pings (0 when none came back). */
async function pingReplies(count: number): Promise<number> {
  const r = await ns
    .exec('ping', ['-c', String(count), '-i', '0.2', '-W', '2', HUB_ADDRESS], { timeoutMs: 20_000 })
    .then((x) => x.stdout)
    .catch((err: Error) => err.message);
  return Number(/(\d+) received/.exec(r)?.[1] ?? 0);
}

describe('a stock WireGuard peer and a fleet of two replicas', () => {
  it('is answered by the replica holding its session, and never by the other one', async () => {
    const [a, b] = [replicas[0]!, replicas[1]!];
    expect(await pingReplies(3)).toBe(3);
    // B learns (the mesh's heartbeat) that A holds the session.
    await waitFor(
      async () => {
        const c = await api(b.ready.url, 'GET', `/api/v1/clusters/${CLUSTER}`, { token: b.adminKey });
        return c.body.connected === true;
      },
      10_000,
      'replica B to show the session A holds',
    );
    const before = await metrics(b);
    await pointAt(b.udpPort);
    expect(await pingReplies(5)).toBe(0);
    const after = await metrics(b);
    const drops = [...after].filter(([k, v]) => k.startsWith('tunnel_relay_udp_datagrams_dropped') && v > 0);
    expect(udpCounter(after, 'datagrams_dropped_total', 'not-owner'), JSON.stringify(drops)).toBeGreaterThan(
      udpCounter(before, 'datagrams_dropped_total', 'not-owner'),
    );
    expect(udpCounter(after, 'datagrams_sent_total')).toBe(udpCounter(before, 'datagrams_sent_total'));
    expect(udpCounter(after, 'datagrams_authenticated_total')).toBe(
      udpCounter(before, 'datagrams_authenticated_total'),
    );
    // Back at A: answered again.
    await pointAt(a.udpPort);
    expect(await pingReplies(3)).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
