/**
 * Two UDP transports on one tunnel endpoint, each attached with one listenUdp call: stock WireGuard peers (UdpBind, a
 * bare device on its own socket) on loopback, one pointed at each transport, are both answered (the endpoint answers
 * their ICMP echo), each from the transport its datagrams came through (its direct path sends there); a peer that
 * moves to the other transport moves its direct path with it; and the candidates of both are advertised. A disco
 * peer that pings the second transport is answered from it, the first one sending nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UdpBind } from '../../../test/helpers/udp-bind.js';
import { waitFor } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { generateKeyPair, generatePresharedKey, type KeyPair } from '../../keys.js';
import { buildIcmpEchoPacket, ICMP_ECHO_REQUEST, parseIpv4Address } from '../ip/index.js';
import { DirectPath } from './direct-path.js';
import type { PeerPaths } from './peer-paths.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';
import { UdpTransport } from './udp-transport.js';

const HUB = '100.64.0.1';
const LO = '127.0.0.1';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function transport(): Promise<UdpTransport> {
  const t = await UdpTransport.open({ host: LO, port: 0, gso: null });
  closers.push(() => t.close());
  return t;
}

/** A stock WireGuard peer at `address` pointed at `port`; ping() sends an echo request to the hub. */
async function stockPeer(keys: KeyPair, hubKey: Buffer, psk: Buffer, address: string, port: number) {
  const got: Buffer[] = [];
  const bind = await UdpBind.open({
    host: LO,
    privateKey: keys.privateKey,
    onPacket: (p) => got.push(Buffer.from(p)),
  });
  closers.push(() => bind.close());
  const peer = bind.device.addPeer({
    publicKey: hubKey,
    presharedKey: psk,
    endpoint: bind.to(LO, port),
    allowedIps: [`${HUB}/32`],
  });
  let seq = 0;
  const ping = () =>
    peer.send(
      buildIcmpEchoPacket(
        {
          src: parseIpv4Address(address),
          dst: parseIpv4Address(HUB),
          type: ICMP_ECHO_REQUEST,
          identifier: 1,
          sequence: ++seq,
        },
        Buffer.from('two transports'),
      ),
    );
  return { bind, peer, got, ping };
}

function directVia(paths: PeerPaths): unknown {
  const direct = paths.get('direct');
  return direct instanceof DirectPath ? direct.transport : undefined;
}

describe('a tunnel endpoint on two UDP transports', () => {
  it("answers each peer through the transport it came on, and advertises both transports' candidates", async () => {
    const [a, b] = [await transport(), await transport()];
    const hubKeys = generateKeyPair();
    const hub = new TunnelEndpoint({
      privateKey: hubKeys.privateKey,
      address: parseIpv4Address(HUB),
      clock: realClock,
      udp: a,
      disco: {},
      streams: { role: 'client' },
      onPacket: () => {},
    });
    closers.push(() => hub.close());
    const noInterfaces = { stunServers: [], gatherer: { interfaces: () => ({}) } };
    hub.listenUdp(a, {
      candidates: { ...noInterfaces, publicCandidate: { host: '203.0.113.1', port: a.port } },
    });
    hub.listenUdp(b, {
      candidates: { ...noInterfaces, publicCandidate: { host: '203.0.113.2', port: b.port } },
    });
    expect(hub.candidates?.candidates).toEqual([
      { host: '203.0.113.1', port: a.port },
      { host: '203.0.113.2', port: b.port },
    ]);

    const psk = generatePresharedKey();
    const [k1, k2] = [generateKeyPair(), generateKeyPair()];
    const one = hub.addPeer({ publicKey: k1.publicKey, presharedKey: psk, address: '100.64.0.2' });
    const two = hub.addPeer({ publicKey: k2.publicKey, presharedKey: psk, address: '100.64.0.3' });
    const p1 = await stockPeer(k1, hub.publicKey, psk, '100.64.0.2', a.port);
    const p2 = await stockPeer(k2, hub.publicKey, psk, '100.64.0.3', b.port);
    p1.ping();
    p2.ping();
    await waitFor(() => p1.got.length === 1 && p2.got.length === 1, 5_000, 'both answered');
    expect(directVia(one.paths)).toBe(a);
    expect(directVia(two.paths)).toBe(b);
    const sentByA = a.stats.sent;
    expect(b.stats.sent).toBeGreaterThan(0);

    // The second peer is pointed at the first transport now: its direct path moves there, the other one stays.
    p2.peer.endpoint = p2.bind.to(LO, a.port);
    p2.ping();
    await waitFor(() => p2.got.length === 2, 5_000, 'answered on the first transport');
    expect(directVia(two.paths)).toBe(a);
    expect(directVia(one.paths)).toBe(a);
    expect(a.stats.sent).toBeGreaterThan(sentByA);
  });

  it('answers a disco ping through the transport it came on', async () => {
    const [a, b, agentUdp] = [await transport(), await transport(), await transport()];
    const [hubKeys, agentKeys] = [generateKeyPair(), generateKeyPair()];
    const endpoint = (keys: KeyPair, address: string, udp: UdpTransport) => {
      const e = new TunnelEndpoint({
        privateKey: keys.privateKey,
        address: parseIpv4Address(address),
        clock: realClock,
        udp,
        disco: {},
        streams: { role: address === HUB ? 'client' : 'server' },
        onPacket: () => {},
      });
      closers.push(() => e.close());
      return e;
    };
    const hub = endpoint(hubKeys, HUB, a);
    hub.listenUdp(a);
    hub.listenUdp(b);
    const agent = endpoint(agentKeys, '100.64.0.2', agentUdp);
    agent.listenUdp(agentUdp);
    const psk = generatePresharedKey();
    hub.addPeer({ publicKey: agentKeys.publicKey, presharedKey: psk, address: '100.64.0.2', disco: true });
    agent.addPeer({ publicKey: hubKeys.publicKey, presharedKey: psk, address: HUB, disco: true });
    // The agent knows the hub at the second transport only: its pings go there.
    agent.disco?.setConfigured(hubKeys.publicKey, [{ host: LO, port: b.port }]);
    await waitFor(
      () => (hub.disco?.stats.pings ?? 0) > 0 && (agent.disco?.stats.pongs ?? 0) > 0,
      5_000,
      'a pong',
    );
    expect(b.stats.sent).toBeGreaterThan(0);
    expect(a.stats.sent).toBe(0);
  });
});
