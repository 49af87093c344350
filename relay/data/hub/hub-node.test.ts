/**
 * The hub node against a real DERP server (in-process clients on both sides, no sockets) and a real
 * WireGuard Device as the agent, on a FakeClock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair, generatePresharedKey, type KeyPair, keyToBase64 } from '../../../shared/keys.js';
import { allocPacket, headroomOf } from '../../../shared/net/buffers/packet-room.js';
import { EchoProber, tryParseIpv4 } from '../../../shared/net/ip/echo-prober.js';
import { buildUdpPacket, parseIpv4Address } from '../../../shared/net/ip/index.js';
import { streamDatagramRoom, wrapStreamDatagram } from '../../../shared/net/tunnel-streams/inner-udp.js';
import { Device } from '../../../shared/net/wireguard/device.js';
import type { AdmittedPeer } from '../../control/model/admission.js';
import type { ConnectionStatus } from '../../control/model/connection-status.js';
import { createDerpServer, type DerpServer } from '../derp/server.js';
import { HubMetrics } from '../plane/data-plane-metrics.js';
import { HANDSHAKE_VIEW_MAX_BACKING, HubNode, type HubNodeOptions, MAX_PENDING_PER_KEY } from './hub-node.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

interface World {
  clock: FakeClock;
  derp: DerpServer;
  hub: HubNode;
  hubKey: KeyPair;
  statuses: Map<string, ConnectionStatus>;
  inner: Buffer[];
  admitted: Map<string, AdmittedPeer>;
  lookups: number;
}

function world(
  opts: { lookupDelay?: Promise<void>; maxPeers?: number; hub?: Partial<HubNodeOptions> } = {},
): World {
  const clock = new FakeClock();
  const hubKey = generateKeyPair();
  const derp = createDerpServer({
    keyPair: hubKey,
    clock,
    admission: { isAdmitted: () => true },
    policy: { canSend: (s, d) => s.equals(hubKey.publicKey) || d.equals(hubKey.publicKey) },
  });
  const w: World = {
    clock,
    derp,
    hubKey,
    statuses: new Map(),
    inner: [],
    admitted: new Map(),
    lookups: 0,
  } as unknown as World;
  w.hub = new HubNode({
    privateKey: hubKey.privateKey,
    derp,
    clock,
    lookup: async (k) => {
      w.lookups++;
      await opts.lookupDelay;
      return w.admitted.get(keyToBase64(k)) ?? null;
    },
    status: { onStatus: (c, s) => w.statuses.set(c, s), statusIntervalMs: 1_000 },
    onInnerPacket: (p) => w.inner.push(Buffer.from(p)),
    ...(opts.maxPeers ? { maxPeers: opts.maxPeers } : {}),
    ...opts.hub,
  });
  closers.push(() => derp.shutdown());
  closers.push(() => w.hub.close());
  return w;
}

/** An agent: a WireGuard device whose datagrams travel through the DERP server's in-process client. */
function agent(w: World, n: number) {
  const kp = generateKeyPair();
  const psk = keyToBase64(generatePresharedKey());
  const address = `100.64.0.${n}`;
  const info: AdmittedPeer = {
    cluster: `edge-${n}`,
    publicKey: keyToBase64(kp.publicKey),
    address,
    presharedKey: psk,
  };
  const got: Buffer[] = [];
  const prober = new EchoProber({
    clock: w.clock,
    src: parseIpv4Address(address),
    dst: parseIpv4Address('100.64.0.1'),
  });
  let device: Device;
  const local = w.derp.connectLocal(kp, {
    onPacket: (src, p) => {
      if (src.equals(w.hubKey.publicKey)) device.receive(p, toHub);
    },
  });
  const toHub = { key: 'derp:hub', send: (d: Buffer) => local.send(w.hubKey.publicKey, d) };
  device = new Device({
    privateKey: kp.privateKey,
    clock: w.clock,
    onPacket: (p) => {
      got.push(Buffer.from(p));
      const ip = tryParseIpv4(p);
      if (ip) prober.onPacket(ip);
    },
  });
  const hubPeer = device.addPeer({
    publicKey: w.hubKey.publicKey,
    presharedKey: psk,
    endpoint: toHub,
    allowedIps: ['100.64.0.1/32'],
  });
  closers.push(() => local.close());
  closers.push(() => device.close());
  return { kp, info, device, hubPeer, local, got, prober };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('HubNode', () => {
  it('adds an admitted agent on its first datagram, completes the handshake and answers ICMP echo', async () => {
    const w = world();
    const a = agent(w, 2);
    w.admitted.set(a.info.publicKey, a.info);
    a.hubPeer.send(a.prober.probe()); // staged; starts a handshake
    await settle(); // the lookup
    await settle(); // the initiation's turn in the handshake queue
    expect(w.lookups).toBe(1);
    expect(w.hub.agent(a.info.publicKey)?.cluster).toBe('edge-2');
    expect(w.hub.agentForCluster('edge-2')?.publicKey).toBe(a.info.publicKey);
    expect(a.hubPeer.isSessionUp).toBe(true);
    // The staged probe went out after the handshake and the hub answered it.
    expect(a.prober.received).toBe(1);
    const st = w.hub.status(a.info.publicKey)!;
    expect(st).toMatchObject({ connected: true, path: 'relayed' });
    expect(st.lastHandshake).toBe(w.clock.wallNow());
    expect(w.statuses.get('edge-2')?.connected).toBe(true);
  });

  it('reports a new run of an agent (a new probe identifier, or sequence 1 again) before answering its probe', async () => {
    const w = world();
    const a = agent(w, 2);
    w.hub.addAgent(a.info);
    // `replied`: whether the hub's reply to the probe had reached the agent when the listener ran.
    const runs: Array<{ cluster: string; replied: boolean }> = [];
    let repliesBefore = 0;
    w.hub.onAgentRun((ag) => runs.push({ cluster: ag.cluster, replied: a.got.length > repliesBefore }));
    const probeWith = async (prober: EchoProber) => {
      repliesBefore = a.got.length;
      a.hubPeer.send(prober.probe());
      await settle();
      await settle();
    };
    await probeWith(a.prober); // the first run the hub hears
    await probeWith(a.prober); // same run
    expect(runs).toEqual([{ cluster: 'edge-2', replied: false }]);
    expect(a.prober.received).toBe(2);
    const src = parseIpv4Address('100.64.0.2');
    const hub = parseIpv4Address('100.64.0.1');
    // The agent restarted: its prober is new, with another identifier.
    const next = new EchoProber({ clock: w.clock, src, dst: hub, identifier: 7 });
    await probeWith(next);
    await probeWith(next);
    expect(runs).toHaveLength(2);
    // Restarted again and drew the same identifier: its sequence starts over at 1.
    await probeWith(new EchoProber({ clock: w.clock, src, dst: hub, identifier: 7 }));
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => !r.replied)).toBe(true);
    expect(a.got).toHaveLength(5);
  });

  it('hands other inner packets to onInnerPacket and drops spoofed sources', async () => {
    const w = world();
    const a = agent(w, 2);
    w.hub.addAgent(a.info);
    const src = parseIpv4Address('100.64.0.2');
    const hub = parseIpv4Address('100.64.0.1');
    a.device.send(buildUdpPacket({ src, dst: hub, srcPort: 1000, dstPort: 2000 }, Buffer.from('hello')));
    a.device.send(
      buildUdpPacket({ src: src + 1, dst: hub, srcPort: 1000, dstPort: 2000 }, Buffer.from('spoof')),
    );
    await settle();
    expect(w.lookups).toBe(0);
    expect(w.inner.map((p) => p.subarray(28).toString())).toEqual(['hello']);
    expect(w.hub.agent(a.info.publicKey)!.peer.drops['allowed-ips']).toBe(1);
  });

  it('inner packets granted the stream room travel in place both ways and arrive intact', async () => {
    const w = world();
    const a = agent(w, 2);
    w.hub.addAgent(a.info);
    a.hubPeer.send(a.prober.probe()); // handshake first: a staged packet is copied, not sent in place
    await settle();
    expect(a.hubPeer.isSessionUp).toBe(true);
    const src = parseIpv4Address('100.64.0.2');
    const hub = parseIpv4Address('100.64.0.1');
    // Inner packets as the stream link builds them: the ARQ datagram carries the room the hub endpoint
    // declares for the agent (its relayed path + WireGuard) plus the inner IPv4/UDP header, which goes in
    // front in place; the device seals and frames the rest in place.
    const room = streamDatagramRoom(w.hub.endpoint.roomFor(src));
    expect(room.mtu).toBe(65_475);
    const roomy = (from: number, to: number, body: Buffer): Buffer => {
      const d = allocPacket(body.length, room.headroom, room.tailroom);
      body.copy(d);
      return wrapStreamDatagram(from, to, d, 2000);
    };
    // This agent's device has the default MTU (1420); the hub's is the relay's (65,503).
    const ups = [1, 15, 1000, 1392].map((n) => Buffer.alloc(n, n & 0xff));
    const downs = [1, 15, 1000, 20_000, 65_475].map((n) => Buffer.alloc(n, (n + 1) & 0xff));
    for (const b of ups) {
      const up = roomy(src, hub, b);
      a.device.send(up);
      expect(headroomOf(up)).toBe(0); // the room went into the WireGuard and DERP headers
    }
    for (const b of downs) {
      const down = roomy(hub, src, b);
      w.hub.endpoint.send(down);
      expect(headroomOf(down)).toBe(0);
    }
    await settle();
    const hex = (bs: Buffer[]) => bs.map((b) => b.toString('hex'));
    expect(w.inner.map((p) => p.subarray(28).toString('hex'))).toEqual(hex(ups));
    expect(a.got.filter((p) => p[9] === 17).map((p) => p.subarray(28).toString('hex'))).toEqual(hex(downs));
    expect(a.hubPeer.drops['bad-size'] + a.hubPeer.drops.decrypt).toBe(0);
    expect(w.hub.agent(a.info.publicKey)!.peer.drops.decrypt).toBe(0);
  });

  it('a key the store does not admit is never added; held datagrams are capped', async () => {
    let release!: () => void;
    const w = world({ lookupDelay: new Promise<void>((r) => (release = r)) });
    const a = agent(w, 2);
    for (let i = 0; i < MAX_PENDING_PER_KEY + 3; i++) a.local.send(w.hubKey.publicKey, Buffer.alloc(148, i));
    expect(w.lookups).toBe(1);
    expect(w.hub.stats.pendingLookups).toBe(1);
    expect(w.hub.stats.dropped.pendingOverflow).toBe(3);
    release();
    await settle();
    await settle();
    expect(w.hub.agent(a.info.publicKey)).toBeUndefined();
    expect(w.hub.agentForCluster('edge-2')).toBeUndefined();
    expect(w.hub.stats.dropped.notAdmitted).toBe(MAX_PENDING_PER_KEY);
    expect(w.hub.stats.pendingLookups).toBe(0);
  });

  it('reports an agent disconnected when its relay connection goes, or it goes silent; removeAgent forgets it', async () => {
    const w = world();
    const a = agent(w, 2);
    w.hub.addAgent(a.info);
    a.hubPeer.send(a.prober.probe());
    await settle();
    w.clock.advance(1_000);
    expect(w.statuses.get('edge-2')?.connected).toBe(true);
    // WireGuard's passive keepalives answer the hub's probes: still connected much later.
    w.clock.advance(30_000);
    expect(w.statuses.get('edge-2')?.connected).toBe(true);
    // Relay connection gone: PeerGone reports at once.
    a.local.close();
    expect(w.statuses.get('edge-2')).toMatchObject({ connected: false, path: 'none', rttMs: null });
    expect(w.statuses.get('edge-2')?.lastHandshake).not.toBeNull();

    // A second agent whose device stops answering while its relay connection stays: down after 15 s.
    const b = agent(w, 3);
    w.hub.addAgent(b.info);
    b.hubPeer.send(b.prober.probe());
    await settle();
    w.clock.advance(1_000);
    expect(w.statuses.get('edge-3')?.connected).toBe(true);
    b.device.close();
    // The last datagram came 1 s before the close; the window is 15 s.
    w.clock.advance(13_000);
    expect(w.statuses.get('edge-3')?.connected).toBe(true);
    w.clock.advance(2_000);
    expect(w.statuses.get('edge-3')?.connected).toBe(false);

    expect(w.hub.removeAgent(a.info.publicKey)).toBe(true);
    expect(w.hub.agent(a.info.publicKey)).toBeUndefined();
    expect(w.hub.removeAgent(b.info.publicKey)).toBe(true);
    expect(w.hub.device.stats.peers).toBe(0);
    w.statuses.clear();
    w.clock.advance(5_000);
    expect(w.statuses.size).toBe(0);
  });

  it('re-adding with a new preshared key replaces the peer; the same parameters keep it', () => {
    const w = world();
    const a = agent(w, 2);
    expect(w.hub.addAgent(a.info)).toBe(true);
    const first = w.hub.agent(a.info.publicKey)!.peer;
    expect(w.hub.addAgent({ ...a.info })).toBe(true);
    expect(w.hub.agent(a.info.publicKey)!.peer).toBe(first);
    w.hub.addAgent({ ...a.info, presharedKey: keyToBase64(generatePresharedKey()) });
    expect(w.hub.agent(a.info.publicKey)!.peer).not.toBe(first);
    expect(w.hub.device.stats.peers).toBe(1);
  });

  it('the hub probes connected agents for its RTT', async () => {
    const w = world();
    const a = agent(w, 2);
    // The agent answers echo requests to its address, as the agent session does.
    w.hub.addAgent(a.info);
    a.hubPeer.send(a.prober.probe());
    await settle();
    const before = a.got.length;
    w.clock.advance(1_000);
    expect(a.got.length).toBe(before + 1);
    const req = a.got[a.got.length - 1]!;
    expect(req[9]).toBe(1); // ICMP
    expect(req[20]).toBe(8); // echo request
  });

  it('caps peers at maxPeers and refuses unusable records without throwing', () => {
    const w = world({ maxPeers: 1 });
    const a = agent(w, 2);
    const b = agent(w, 3);
    expect(w.hub.addAgent({ ...a.info, presharedKey: 'not a key' })).toBe(false);
    expect(w.hub.addAgent({ ...a.info, address: '100.64.0.300' })).toBe(false);
    expect(w.hub.addAgent(a.info)).toBe(true);
    expect(w.hub.addAgent(b.info)).toBe(false);
    expect(w.hub.stats.agents).toBe(1);
    expect(w.hub.agent(b.info.publicKey)).toBeUndefined();
  });
});

describe('HubNode handshake queue', () => {
  /** A hand-driven `defer`: each call queues one turn; step() runs the oldest. */
  function turns() {
    const q: Array<() => void> = [];
    return {
      defer: (fn: () => void) => void q.push(fn),
      get scheduled() {
        return q.length;
      },
      step(): boolean {
        const fn = q.shift();
        fn?.();
        return fn !== undefined;
      },
    };
  }

  it('a burst of initiations from N agents is handled at most K per deferred turn, in order; all sessions complete', () => {
    const N = 40;
    const K = 8;
    const t = turns();
    const w = world({ hub: { handshakes: { defer: t.defer, batch: K } } });
    const agents = Array.from({ length: N }, (_, i) => agent(w, i + 2));
    const order: number[] = [];
    agents.forEach((a, i) => {
      expect(w.hub.addAgent(a.info)).toBe(true);
      a.hubPeer.on('handshake', () => order.push(i));
    });
    // Each agent's DERP client delivers its initiation to the hub synchronously: all N wait in the queue.
    for (const a of agents) a.hubPeer.send(a.prober.probe());
    expect(w.hub.stats.handshakeQueue).toBe(N);
    expect(w.hub.device.stats.rxDatagrams).toBe(0);
    expect(order).toEqual([]);
    let turnsRun = 0;
    let prev = 0;
    while (t.step()) {
      turnsRun++;
      const done = order.length;
      expect(done - prev).toBeLessThanOrEqual(K);
      expect(w.hub.stats.handshakeQueue).toBe(N - done);
      prev = done;
    }
    expect(turnsRun).toBe(Math.ceil(N / K));
    // Responses went back in arrival order; each agent's staged probe then went through at once.
    expect(order).toEqual(agents.map((_, i) => i));
    for (const a of agents) {
      expect(a.hubPeer.isSessionUp).toBe(true);
      expect(a.prober.received).toBe(1);
    }
    expect(w.hub.stats.dropped.handshakeQueueFull).toBe(0);
  });

  it('transport data is not delayed behind waiting handshakes', () => {
    const t = turns();
    const w = world({ hub: { handshakes: { defer: t.defer, batch: 4 } } });
    const live = agent(w, 2);
    w.hub.addAgent(live.info);
    live.hubPeer.send(live.prober.probe());
    while (t.step());
    expect(live.prober.received).toBe(1);
    const storm = Array.from({ length: 12 }, (_, i) => agent(w, i + 3));
    for (const a of storm) {
      w.hub.addAgent(a.info);
      a.hubPeer.send(a.prober.probe());
    }
    expect(w.hub.stats.handshakeQueue).toBe(12);
    // The live session's ping is answered inside the same callback, with no queue turn run.
    live.hubPeer.send(live.prober.probe());
    expect(live.prober.received).toBe(2);
    expect(w.hub.stats.handshakeQueue).toBe(12);
    t.step();
    live.hubPeer.send(live.prober.probe());
    expect(live.prober.received).toBe(3);
    expect(w.hub.stats.handshakeQueue).toBe(8);
  });

  it('a full queue drops new handshake messages, counts them (metrics too), and the agents retry later', () => {
    const t = turns();
    const cap = 5;
    const w = world({ hub: { handshakes: { defer: t.defer, batch: 2, cap: cap } } });
    const metrics = new HubMetrics(w.hub);
    const agents = Array.from({ length: 8 }, (_, i) => agent(w, i + 2));
    for (const a of agents) {
      w.hub.addAgent(a.info);
      a.hubPeer.send(a.prober.probe());
    }
    expect(w.hub.stats.handshakeQueue).toBe(cap);
    expect(w.hub.stats.dropped.handshakeQueueFull).toBe(3);
    const dropped = metrics
      .families()
      .find((f) => f.name === 'tunnel_relay_hub_dropped_total')!
      .samples.find(([l]) => l.stage === 'hub' && l.reason === 'handshake_queue_full');
    expect(dropped?.[1]).toBe(3);
    const depth = metrics.families().find((f) => f.name === 'tunnel_relay_hub_handshake_queue')!;
    expect(depth.samples[0]?.[1]).toBe(cap);
    while (t.step());
    expect(agents.map((a) => a.hubPeer.isSessionUp)).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    // The dropped agents' initiators retry after REKEY_TIMEOUT (5 s + jitter).
    w.clock.advance(6_000);
    while (t.step());
    expect(agents.every((a) => a.hubPeer.isSessionUp)).toBe(true);
    expect(w.hub.stats.dropped.handshakeQueueFull).toBe(3);
  });

  it('held datagrams of a key looked up on demand go through the queue; close empties it', async () => {
    const t = turns();
    const w = world({ hub: { handshakes: { defer: t.defer } } });
    const a = agent(w, 2);
    w.admitted.set(a.info.publicKey, a.info);
    a.hubPeer.send(a.prober.probe());
    expect(w.hub.stats.pendingLookups).toBe(1);
    await settle();
    expect(w.hub.agent(a.info.publicKey)).toBeDefined();
    expect(w.hub.stats.handshakeQueue).toBe(1);
    expect(a.hubPeer.isSessionUp).toBe(false);
    t.step();
    expect(a.hubPeer.isSessionUp).toBe(true);
    expect(a.prober.received).toBe(1);

    const b = agent(w, 3);
    w.hub.addAgent(b.info);
    b.hubPeer.send(b.prober.probe());
    expect(w.hub.stats.handshakeQueue).toBe(1);
    w.hub.close();
    expect(w.hub.stats.handshakeQueue).toBe(0);
    while (t.step());
    expect(b.hubPeer.isSessionUp).toBe(false);
  });

  it('a handshake message that waited a whole retry interval is dropped as stale; the retry is answered', () => {
    const t = turns();
    const w = world({ hub: { handshakes: { defer: t.defer, batch: 1 } } });
    const [a, b] = [agent(w, 2), agent(w, 3)];
    for (const x of [a, b]) {
      w.hub.addAgent(x.info);
      x.hubPeer.send(x.prober.probe());
    }
    t.step();
    expect(a.hubPeer.isSessionUp).toBe(true);
    expect(w.hub.stats.handshakeQueue).toBe(1);
    w.clock.advance(5_400); // b's initiator gives up on its first initiation and sends a new one
    expect(w.hub.stats.handshakeQueue).toBe(2);
    while (t.step());
    expect(w.hub.stats.dropped.handshakeStale).toBe(1);
    expect(b.hubPeer.isSessionUp).toBe(true);
    expect(b.prober.received).toBe(1);
  });

  it('a queued handshake message that is a view into a large buffer is copied; the buffer may change meanwhile', () => {
    const t = turns();
    const w = world({ hub: { handshakes: { defer: t.defer } } });
    const a = agent(w, 2);
    w.hub.addAgent(a.info);
    // The agent's transport hands over views into one 64 KiB buffer and rewrites it after each send.
    const send = a.local.send.bind(a.local);
    const big = Buffer.alloc(65_536);
    a.local.send = (dst: Uint8Array, p: Uint8Array) => {
      big.set(p, 1_000);
      const ok = send(dst, big.subarray(1_000, 1_000 + p.length));
      big.fill(0xee);
      return ok;
    };
    expect(big.length).toBeGreaterThan(HANDSHAKE_VIEW_MAX_BACKING);
    a.hubPeer.send(a.prober.probe());
    expect(w.hub.stats.handshakeQueue).toBe(1);
    while (t.step());
    expect(w.hub.device.stats.drops.mac1).toBe(0);
    expect(a.hubPeer.isSessionUp).toBe(true);
    expect(a.prober.received).toBe(1);
  });
});
