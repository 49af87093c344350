/**
 * The data plane in one process over real sockets: a real relay (startRelay on a loopback port with the
 * data plane mounted), real registrations through the API, and the agent session library connecting to
 * wss://.../derp with the CA pin. Checks the session comes up and shows in the cluster API, the relay
 * only ever routes ciphertext, agent-to-agent packets are dropped and counted, and deleting a cluster
 * disconnects its agent at once and refuses it afterwards.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type DataPlane, dataPlaneOf } from '../relay/data/plane/data-plane.js';
import { hubProxyPlugin } from '../relay/data/proxy/proxy-plugin.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { connectDerp, type DerpStateEvent } from '../shared/net/derp/client.js';
import { buildUdpPacket, parseIpv4Address } from '../shared/net/ip/index.js';
import type { AgentState, Tunnel } from '../tunnel-client/agent/types.js';
import { agentDataPlane } from '../tunnel-client/session/agent-data-plane.js';
import { AgentSession } from '../tunnel-client/session/agent-session.js';
import { startTestRelay, type TestRelay } from './helpers/test-relay.js';
import { freePort } from './helpers/tinyproxy.js';
import { waitFor } from './helpers/wait.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const until = (what: string, cond: () => boolean | Promise<boolean>, ms = 10_000) =>
  waitFor(cond, ms, what, 50);

interface Setup {
  t: TestRelay;
  dp: DataPlane;
  adminKey: string;
  routed: Buffer[];
  inner: Buffer[];
}

async function setup(): Promise<Setup> {
  let dp: DataPlane | undefined;
  const routed: Buffer[] = [];
  const inner: Buffer[] = [];
  const t = await startTestRelay({
    plugins: [
      hubProxyPlugin(
        {
          dataPlane: {
            onPacket: (_s, _d, payload) => routed.push(Buffer.from(payload)),
            hub: { onInnerPacket: (p) => inner.push(Buffer.from(p)), status: { statusIntervalMs: 200 } },
          },
        },
        (p) => {
          dp = p.dataPlane;
        },
      ),
    ],
  });
  cleanups.push(() => t.cleanup());
  if (!dp) throw new Error('data plane not mounted');
  expect(dataPlaneOf(t.relay.fastify)).toBe(dp);
  return { t, dp, adminKey: t.relay.adminKey!, routed, inner };
}

/** Creates a cluster and registers a fresh key with its PSK, as `tunnel-client join` does. */
async function register(s: Setup, name: string) {
  const created = await s.t.call('POST', '/api/v1/clusters', { token: s.adminKey, body: { name } });
  expect(created.status).toBe(201);
  const kp = generateKeyPair();
  const reg = await s.t.call('POST', '/api/v1/register', {
    token: created.body.bootstrap.psk,
    body: { cluster: name, publicKey: keyToBase64(kp.publicKey), agentVersion: '0.1.0' },
  });
  expect(reg.status).toBe(201);
  return { kp, tunnel: reg.body.tunnel as Tunnel };
}

function startSession(
  s: Setup,
  kp: { privateKey: Buffer },
  tunnel: Tunnel,
  states?: DerpStateEvent[],
  onInnerPacket?: (p: Buffer) => void,
) {
  const session = new AgentSession({
    privateKey: kp.privateKey,
    tunnel,
    caPin: s.t.relay.caPin,
    probeIntervalMs: 300,
    ...(onInnerPacket ? { onInnerPacket } : {}),
    derp: { backoff: { baseMs: 100, maxMs: 500 }, ...(states ? { onState: (e) => states.push(e) } : {}) },
  });
  cleanups.push(() => session.close());
  return session;
}

describe('agent session over the relay (in process)', () => {
  it('comes up over wss with the CA pin; the cluster API shows connected, relayed and the handshake', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    expect(tunnel.derpUrl).toBe(`${s.t.relay.url.replace('https:', 'wss:')}/derp`);
    const session = startSession(s, kp, tunnel);
    await session.whenUp(10_000);
    const st = session.stats();
    expect(st.connected).toBe(true);
    expect(st.path).toBe('relayed');
    expect(st.rttMs).not.toBeNull();
    expect(st.bytesIn).toBeGreaterThan(0);
    expect(st.bytesOut).toBeGreaterThan(0);
    expect(Date.parse(st.lastHandshake ?? '')).toBeGreaterThan(Date.now() - 60_000);

    await until('cluster shows the session', async () => {
      const c = await s.t.call('GET', '/api/v1/clusters/edge-1', { token: s.adminKey });
      return c.body.connected === true && c.body.rttMs !== null;
    });
    const c = await s.t.call('GET', '/api/v1/clusters/edge-1', { token: s.adminKey });
    expect(c.body.path).toBe('relayed');
    expect(Date.parse(c.body.lastHandshake)).toBeGreaterThan(Date.now() - 60_000);
    expect(c.body.bytesIn).toBeGreaterThan(0);
    expect(c.body.bytesOut).toBeGreaterThan(0);
    expect(s.dp.hub.status(keyToBase64(kp.publicKey))?.connected).toBe(true);

    // Closing the agent: the hub reports it disconnected.
    await session.close();
    await until('cluster shows disconnected', async () => {
      const d = await s.t.call('GET', '/api/v1/clusters/edge-1', { token: s.adminKey });
      return d.body.connected === false && d.body.path === 'none';
    });
  });

  it('a key that is not registered is refused by the DERP server', async () => {
    const s = await setup();
    const { tunnel } = await register(s, 'edge-1');
    const stranger = generateKeyPair();
    const states: DerpStateEvent[] = [];
    const c = connectDerp({
      url: tunnel.derpUrl,
      keyPair: stranger,
      caPin: s.t.relay.caPin,
      onPacket: () => {},
      onState: (e) => states.push(e),
      backoff: { baseMs: 100, maxMs: 200 },
    });
    cleanups.push(() => c.close());
    await until('refusal', () => states.some((e) => e.closeCode === 4001));
    expect(c.connected).toBe(false);
    expect(s.dp.derp.stats.refusedNotAdmitted).toBeGreaterThan(0);
  });

  it('the relay routes only ciphertext: a marker sent inside the session never appears on the relay', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    const atAgent: Buffer[] = [];
    const session = startSession(s, kp, tunnel, undefined, (p) => atAgent.push(Buffer.from(p)));
    await session.whenUp(10_000);
    const marker = Buffer.from(`PLAINTEXT-MARKER-${Math.random().toString(36).slice(2)}`);
    const self = parseIpv4Address(tunnel.address.split('/')[0]!);
    const hub = parseIpv4Address(tunnel.hubAddress);
    const before = s.routed.length;
    for (let i = 0; i < 5; i++) {
      session.endpoint.send(buildUdpPacket({ src: self, dst: hub, srcPort: 4000 + i, dstPort: 7 }, marker));
    }
    await until('hub got the marker', () => s.inner.filter((p) => p.includes(marker)).length === 5);
    // And the other way: hub -> agent, delivered to the session's inner-packet handler.
    const back = Buffer.from(`HUB-TO-AGENT-${Math.random().toString(36).slice(2)}`);
    s.dp.hub.endpoint.send(buildUdpPacket({ src: hub, dst: self, srcPort: 7, dstPort: 4000 }, back));
    await until('agent got the reply marker', () => atAgent.some((p) => p.includes(back)));
    expect(s.routed.length).toBeGreaterThan(before + 4);
    for (const p of s.routed) {
      expect(p.includes(marker)).toBe(false);
      expect(p.includes(marker.subarray(0, 12))).toBe(false);
      expect(p.includes(back)).toBe(false);
    }
  });

  it('a packet from one agent to another agent is dropped by policy and counted', async () => {
    const s = await setup();
    const a = await register(s, 'edge-a');
    const b = await register(s, 'edge-b');
    const sa = startSession(s, a.kp, a.tunnel);
    await sa.whenUp(10_000);
    const got: Buffer[] = [];
    const cb = connectDerp({
      url: b.tunnel.derpUrl,
      keyPair: b.kp,
      caPin: s.t.relay.caPin,
      onPacket: (_src, p) => got.push(Buffer.from(p)),
    });
    cleanups.push(() => cb.close());
    await cb.whenConnected(10_000);
    const dropped = s.dp.derp.stats.dropped.policy;
    expect(cb.send(a.kp.publicKey, Buffer.from('agent to agent'))).toBe(true);
    await until('policy drop counted', () => s.dp.derp.stats.dropped.policy === dropped + 1);
    // B -> hub is allowed (a garbage datagram the hub drops), and A never hears from B.
    expect(cb.send(s.dp.hub.publicKey, Buffer.from('not wireguard'))).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(s.dp.derp.stats.dropped.policy).toBe(dropped + 1);
    expect(sa.connected).toBe(true);
  });

  it('deleting the cluster disconnects its agent at once and refuses it from then on', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    const states: DerpStateEvent[] = [];
    const session = startSession(s, kp, tunnel, states);
    await session.whenUp(10_000);
    const id = keyToBase64(kp.publicKey);
    expect(s.dp.hub.agent(id)).toBeDefined();
    const refusedBefore = s.dp.derp.stats.refusedNotAdmitted;

    const del = await s.t.call('DELETE', '/api/v1/clusters/edge-1', { token: s.adminKey });
    expect(del.status).toBe(200);
    await until('agent disconnected', () => states.some((e) => e.closeCode === 4004), 2_000);
    expect(s.dp.hub.agent(id)).toBeUndefined();
    expect(s.dp.derp.isConnected(kp.publicKey)).toBe(false);
    await until('reconnect refused', () => s.dp.derp.stats.refusedNotAdmitted > refusedBefore);
    // The client hears the refusal (4001) just after the server counted it.
    await until('client told it is not admitted', () => states.some((e) => e.closeCode === 4001), 2_000);
    await until('session down', () => !session.connected, 8_000);
    expect(session.derp.connected).toBe(false);
  });

  it('a hub that lost the session keys is noticed as a dead path and the session comes back by itself', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    const session = new AgentSession({
      privateKey: kp.privateKey,
      tunnel,
      caPin: s.t.relay.caPin,
      probeIntervalMs: 200,
      // Idle, as here, the session probes at this pace too (by default 25 s).
      idleProbeIntervalMs: 200,
      deadAfterMs: 1_000,
    });
    cleanups.push(() => session.close());
    await session.whenUp(10_000);
    const first = session.hub.lastHandshakeAt;
    // The hub forgets the peer (as after a hub restart): its probes go unanswered.
    const id = keyToBase64(kp.publicKey);
    const info = s.dp.hub.agent(id)!;
    s.dp.hub.removeAgent(id);
    s.dp.hub.addAgent({
      cluster: info.cluster,
      publicKey: id,
      address: info.address,
      presharedKey: tunnel.presharedKey,
    });
    await until('dead path noticed', () => !session.connected, 5_000);
    await until('session back', () => session.connected, 10_000);
    expect(session.hub.lastHandshakeAt).not.toBe(first);
    expect(s.dp.hub.status(id)?.connected).toBe(true);
  });

  it('deny closes the session at once and the cluster shows disconnected', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    const states: DerpStateEvent[] = [];
    const session = startSession(s, kp, tunnel, states);
    await session.whenUp(10_000);
    expect((await s.t.call('POST', '/api/v1/clusters/edge-1/deny', { token: s.adminKey })).status).toBe(200);
    await until('closed by the relay', () => states.some((e) => e.closeCode === 4004), 2_000);
    expect(s.dp.hub.agent(keyToBase64(kp.publicKey))).toBeUndefined();
    const c = await s.t.call('GET', '/api/v1/clusters/edge-1', { token: s.adminKey });
    expect(c.body).toMatchObject({ connected: false, path: 'none' });
    await until('session down', () => !session.connected, 8_000);
  });

  it('a graceful relay shutdown tells clients it is restarting before closing them', async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    const states: DerpStateEvent[] = [];
    const session = new AgentSession({
      privateKey: kp.privateKey,
      tunnel,
      caPin: s.t.relay.caPin,
      derp: { onState: (e) => states.push(e) },
    });
    cleanups.push(() => session.close());
    await session.whenUp(10_000);
    await s.t.relay.close();
    await until('reconnecting', () => states.some((e) => e.state === 'reconnecting'), 5_000);
    const r = states.find((e) => e.state === 'reconnecting')!;
    expect(r.closeCode).toBe(1001);
    // The Restarting frame (reconnect within 1 s) replaced the normal backoff.
    expect(r.delayMs).toBeLessThanOrEqual(1_000);
  });

  it("the agent runner's factory starts the session and reports changes", async () => {
    const s = await setup();
    const { kp, tunnel } = await register(s, 'edge-1');
    let changes = 0;
    const factory = agentDataPlane();
    const state = {
      cluster: 'edge-1',
      caPin: s.t.relay.caPin,
      caFile: null,
      upstream: null,
      allow: [],
    } as unknown as AgentState;
    const dp = await factory({
      state,
      tunnel,
      privateKey: keyToBase64(kp.privateKey),
      onChange: () => changes++,
    });
    cleanups.push(() => dp.close());
    await dp.whenUp?.(10_000);
    expect(dp.stats()).toMatchObject({ connected: true, path: 'relayed' });
    expect(changes).toBeGreaterThan(0);
    expect(s.dp.hub.agentForCluster('edge-1')?.publicKey).toBe(keyToBase64(kp.publicKey));
    await dp.close();
    expect(dp.stats()).toMatchObject({ connected: false, path: 'none', rttMs: null });
  });

  it('on start the hub holds every accepted agent as a peer, before any packet', async () => {
    const s = await setup();
    const a = await register(s, 'edge-a');
    const b = await register(s, 'edge-b');
    await s.t.call('POST', '/api/v1/clusters/edge-b/deny', { token: s.adminKey });
    await s.t.restart();
    const dp = dataPlaneOf(s.t.relay.fastify)!;
    expect(dp).not.toBe(s.dp);
    expect(dp.hub.agent(keyToBase64(a.kp.publicKey))?.cluster).toBe('edge-a');
    expect(dp.hub.agent(keyToBase64(b.kp.publicKey))).toBeUndefined();
    expect(dp.hub.stats.agents).toBe(1);
  });
});

describe('agent session across a relay restart on the same address', () => {
  it('handshakes the new relay at once, even seconds after its last handshake', async () => {
    const port = await freePort();
    const t = await startTestRelay({
      flags: { listen: `127.0.0.1:${port}` },
      plugins: [hubProxyPlugin({ dataPlane: { hub: { status: { statusIntervalMs: 200 } } } })],
    });
    cleanups.push(() => t.cleanup());
    const s: Setup = {
      t,
      dp: dataPlaneOf(t.relay.fastify)!,
      adminKey: t.relay.adminKey!,
      routed: [],
      inner: [],
    };
    const { kp, tunnel } = await register(s, 'edge-1');
    const session = startSession(s, kp, tunnel);
    await session.whenUp(10_000);
    const first = session.hub.lastHandshakeAt;
    // A restart (another replica behind the same address) well within WireGuard's 5 s between initiations.
    await t.restart();
    const restarted = Date.now();
    await until('session down', () => !session.connected || session.hub.lastHandshakeAt !== first, 5_000);
    await until('new handshake', () => session.hub.lastHandshakeAt !== first && session.connected, 8_000);
    expect(Date.now() - restarted).toBeLessThan(2_500);
    expect(dataPlaneOf(t.relay.fastify)!.hub.status(keyToBase64(kp.publicKey))?.connected).toBe(true);
  }, 20_000);
});
