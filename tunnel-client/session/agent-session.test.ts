/**
 * AgentSession timers on a FakeClock: the agent's relay client is the real DERP server's in-process client
 * (no sockets), the other side a real HubNode.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createDerpServer, type DerpServer } from '../../relay/data/derp/server.js';
import { HubNode } from '../../relay/data/hub/hub-node.js';
import { FakeClock } from '../../shared/clock.js';
import { generateKeyPair, generatePresharedKey, keyToBase64 } from '../../shared/keys.js';
import type { DerpClient, DerpClientOptions, DerpClientState } from '../../shared/net/derp/client.js';
import type { DerpClientLike } from '../../shared/net/derp/types.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import { buildUdpPacket } from '../../shared/net/ip/udp.js';
import type { Tunnel } from '../agent/types.js';
import { AgentSession, DEFAULT_DEAD_AFTER_MS, DEFAULT_PROBE_INTERVAL_MS } from './agent-session.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/**
 * A DerpClient over the server's in-process client; `drop()` / `restore()` simulate the relay going away.
 */
function localConnector(derp: DerpServer, clock: FakeClock) {
  let local: DerpClientLike | undefined;
  let opts: DerpClientOptions | undefined;
  let state: DerpClientState = 'connecting';
  const up = () => {
    // 1 ms of latency towards the agent, like a socket (the hub's side is delivered synchronously).
    local = derp.connectLocal(opts!.keyPair, {
      onPacket: (src, p) => {
        const s = Buffer.from(src);
        const copy = Buffer.from(p);
        clock.setTimer(1, () => {
          if (state === 'connected') opts!.onPacket(s, copy);
        });
      },
    });
    state = 'connected';
    opts!.onState?.({ state: 'connected', attempt: 0 });
  };
  const client: DerpClient = {
    get publicKey() {
      return opts!.keyPair.publicKey;
    },
    get connected() {
      return state === 'connected';
    },
    get state() {
      return state;
    },
    stats: { packetsIn: 0, bytesIn: 0, packetsOut: 0, bytesOut: 0, dropped: 0, connects: 0 },
    send: (dst, payload) => state === 'connected' && local!.send(dst, payload),
    whenConnected: async () => {},
    reconnectNow: () => false,
    close: () => {
      state = 'closed';
      local?.close();
    },
  };
  return {
    connect: (o: DerpClientOptions): DerpClient => {
      opts = o;
      clock.setTimer(0, up);
      return client;
    },
    drop() {
      local?.close();
      state = 'reconnecting';
      opts!.onState?.({ state: 'reconnecting', attempt: 1, delayMs: 1000 });
    },
    restore: up,
  };
}

function setup() {
  const clock = new FakeClock();
  const hubKey = generateKeyPair();
  const derp = createDerpServer({
    keyPair: hubKey,
    clock,
    admission: { isAdmitted: () => true },
    policy: { canSend: (s, d) => s.equals(hubKey.publicKey) || d.equals(hubKey.publicKey) },
  });
  const hub = new HubNode({
    privateKey: hubKey.privateKey,
    derp,
    clock,
    lookup: async () => null,
    // Disco as the relay runs it (relay/data/plane/data-plane.ts): the agent's pacing follows its traffic.
    disco: {},
    // The hub drains its handshake queue on deferred turns: on the fake clock here, not setImmediate.
    handshakes: { defer: (fn) => void clock.setTimer(0, fn) },
  });
  const agentKey = generateKeyPair();
  const psk = keyToBase64(generatePresharedKey());
  const info = {
    cluster: 'edge-1',
    publicKey: keyToBase64(agentKey.publicKey),
    address: '100.64.0.2',
    presharedKey: psk,
  };
  hub.addAgent(info);
  const tunnel: Tunnel = {
    hubPublicKey: keyToBase64(hubKey.publicKey),
    presharedKey: psk,
    address: '100.64.0.2/32',
    hubAddress: '100.64.0.1',
    relayUrl: 'https://relay.invalid',
    derpUrl: 'wss://relay.invalid/derp',
    udpEndpoint: null,
  };
  const conn = localConnector(derp, clock);
  let changes = 0;
  const logs: Array<{ at: number; line: string }> = [];
  const session = new AgentSession({
    log: (line) => logs.push({ at: clock.now(), line }),
    privateKey: agentKey.privateKey,
    tunnel,
    clock,
    connect: conn.connect,
    onChange: () => changes++,
  });
  closers.push(() => derp.shutdown());
  closers.push(() => hub.close());
  closers.push(() => session.close());
  return { clock, hub, session, conn, info, logs, changes: () => changes };
}

describe('AgentSession', () => {
  it('handshakes as soon as the relay is connected and is up after the first probe reply', () => {
    const { clock, session, hub, info, changes } = setup();
    const start = clock.wallNow();
    expect(session.connected).toBe(false);
    clock.advance(5);
    expect(session.connected).toBe(true);
    // 1 ms towards the agent: the response arrives at 1 ms, the probe's reply 1 ms after it is sent.
    expect(session.stats()).toMatchObject({ connected: true, path: 'relayed', rttMs: 1 });
    expect(session.stats().lastHandshake).toBe(new Date(start + 1).toISOString());
    expect(hub.status(info.publicKey)?.connected).toBe(true);
    expect(changes()).toBeGreaterThan(0);
  });

  it('under traffic, notices a hub that lost its keys within the dead window and recovers', () => {
    const { clock, session, hub, info, logs } = setup();
    clock.advance(5);
    const first = session.hub.lastHandshakeAt;
    // Application traffic to the hub (an inner UDP datagram) every 500 ms: the session probes every 2 s.
    const appPacket = buildUdpPacket(
      { src: parseIpv4Address('100.64.0.2'), dst: parseIpv4Address('100.64.0.1'), srcPort: 9, dstPort: 9 },
      Buffer.from('app'),
    );
    const run = (ms: number) => {
      for (let t = 0; t < ms; t += 500) {
        session.endpoint.send(appPacket);
        clock.advance(500);
      }
    };
    // Past the 5 s handshake rate limit, then the hub forgets the session.
    run(10_000);
    expect(session.connected).toBe(true);
    hub.removeAgent(info.publicKey);
    hub.addAgent(info);
    const lostAt = clock.now();
    logs.length = 0;
    run(20_000);
    const downAt = logs.find((l) => l.line.includes('is down'))?.at ?? Number.NaN;
    const upAt = logs.find((l) => l.line.includes('is up'))?.at ?? Number.NaN;
    expect(session.connected).toBe(true);
    expect(downAt - lostAt).toBeGreaterThanOrEqual(DEFAULT_DEAD_AFTER_MS - DEFAULT_PROBE_INTERVAL_MS);
    expect(downAt - lostAt).toBeLessThanOrEqual(DEFAULT_DEAD_AFTER_MS + DEFAULT_PROBE_INTERVAL_MS);
    // The new handshake starts on the tick that found the path dead; the hub answers at once.
    expect(upAt - downAt).toBeLessThanOrEqual(DEFAULT_PROBE_INTERVAL_MS);
    expect(session.hub.lastHandshakeAt).not.toBe(first);
  });

  it('idle, probes the hub every 25 s, not every 2 s', () => {
    const { clock, session } = setup();
    clock.advance(5);
    clock.advance(20_000); // the first probes, the disco start-up
    const sent = session.stats().bytesOut;
    clock.advance(50_000);
    expect(session.connected).toBe(true);
    // Two probes of 80 WireGuard bytes and their keepalives, not twenty-five probes (2,000 bytes).
    expect(session.stats().bytesOut - sent).toBeLessThan(600);
  });

  it('goes down with the relay connection and handshakes again when it is back', () => {
    const { clock, session, conn } = setup();
    clock.advance(5);
    clock.advance(6_000);
    const before = session.hub.lastHandshakeAt;
    conn.drop();
    expect(session.connected).toBe(false);
    expect(session.stats()).toMatchObject({ connected: false, path: 'none', rttMs: null });
    clock.advance(3_000);
    conn.restore();
    clock.advance(5);
    expect(session.connected).toBe(true);
    expect(session.hub.lastHandshakeAt).toBeGreaterThan(before!);
  });

  it('whenUp resolves on the transition, times out, and rejects on close', async () => {
    const a = setup();
    const up = a.session.whenUp(1_000);
    a.clock.advance(5);
    await expect(up).resolves.toBeUndefined();

    const b = setup();
    b.hub.removeAgent(b.info.publicKey); // the hub does not know this agent: no session
    const never = b.session.whenUp(1_000);
    b.clock.advance(1_000);
    await expect(never).rejects.toMatchObject({ code: 'TIMEOUT' });

    const c = setup();
    const closed = c.session.whenUp(1_000);
    await c.session.close();
    await expect(closed).rejects.toMatchObject({ code: 'CLOSED' });
  });
});
