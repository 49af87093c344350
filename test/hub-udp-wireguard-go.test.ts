/**
 * The hub's UDP port speaks standard WireGuard: the real `tunnel-relay serve --udp-port N` on the host
 * side of a veth, and the real wireguard-go as a stock peer in a network namespace, configured only with
 * what the relay's register reply gives an agent (its tunnel address, the hub's key, the per-pair
 * preshared key, the advertised UDP endpoint). The namespace pings the hub's tunnel address: the
 * handshake completes and the hub answers. When wireguard-go's source port changes (listen port moved on
 * the running interface, keeping its session), the hub answers the new address after the first
 * authenticated packet from it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADDRESS } from '../relay/control/store/addresses.js';
import { api } from './abuse/relay-fixture.js';
import { buildIfStale, cleanup } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { waitFor } from './helpers/wait.js';
import { startWireguardGo, type WireguardGoHandle } from './helpers/wireguard-go.js';
import {
  metrics,
  registerPeer,
  serveWithUdp,
  type Tunnel,
  type UdpRelay,
  udpCounter,
} from './hub-udp-fixture.js';

let ns: Netns;
let relay: UdpRelay;
let tunnel: Tunnel;
let wg: WireguardGoHandle;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'wg', 'wireguard-go', 'ping']);
  buildIfStale();
  ns = await createNetns('hudp', { subnet: 'auto' });
  relay = await serveWithUdp(ns.hostAddress!);
  const reg = await registerPeer(relay, 'stock-peer');
  tunnel = reg.tunnel;
  wg = await startWireguardGo(ns, {
    privateKey: reg.keys.privateKey,
    listenPort: 51820,
    address: tunnel.address.replace(/\/32$/, '/10'),
    peers: [
      {
        publicKey: Buffer.from(tunnel.hubPublicKey, 'base64'),
        presharedKey: Buffer.from(tunnel.presharedKey, 'base64'),
        endpoint: tunnel.udpEndpoint ?? 'none',
        allowedIps: [`${HUB_ADDRESS}/32`],
      },
    ],
  });
}, 60_000);

afterAll(async () => {
  await wg?.stop();
  await cleanup();
  await cleanupAll();
});

const ping = (count: number) =>
  ns.exec('ping', ['-c', String(count), '-i', '0.2', '-W', '3', HUB_ADDRESS], { timeoutMs: 20_000 });

describe('the hub UDP port with wireguard-go as a stock peer', () => {
  it('advertises the UDP endpoint it listens on; the handshake completes and the hub answers pings', async () => {
    expect(tunnel.udpEndpoint).toBe(`${ns.hostAddress}:${relay.udpPort}`);
    const r = await ping(3);
    expect(r.stdout).toMatch(/3 packets transmitted, 3 received/);
    const dump = await wg.wgShow();
    expect(dump.peers[0]!.latestHandshake).toBeGreaterThan(0);
    const m = await metrics(relay);
    expect(udpCounter(m, 'paths_opened_total')).toBe(1);
    expect(udpCounter(m, 'datagrams_authenticated_total')).toBeGreaterThanOrEqual(4); // initiation + 3 echoes
    expect(udpCounter(m, 'datagrams_sent_total')).toBeGreaterThanOrEqual(4);
    // The relay reports the session, on the direct path.
    await waitFor(
      async () => {
        const c = await api(relay.ready.url, 'GET', '/api/v1/clusters/stock-peer', { token: relay.adminKey });
        return c.body.connected === true && c.body.path === 'direct';
      },
      10_000,
      'the cluster to show connected over the direct path',
    );
  }, 40_000);

  it('roams: after its source port changes, the hub answers the new address', async () => {
    const before = udpCounter(await metrics(relay), 'roams_total');
    await wg.set({ listenPort: 51821 });
    const r = await ping(3);
    expect(r.stdout).toMatch(/3 packets transmitted, 3 received/);
    expect(udpCounter(await metrics(relay), 'roams_total')).toBe(before + 1);
    const dump = await wg.wgShow();
    expect(dump.iface.listenPort).toBe(51821);
  }, 40_000);
});
