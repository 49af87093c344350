import { createSocket, type Socket } from 'node:dgram';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait.js';
import { type Clock, FakeClock, realClock } from '../../clock.js';
import { generateKeyPair, type KeyPair } from '../../keys.js';
import { DISCO_MAGIC, type DiscoAddress, newTxid, openDisco, sealDisco } from '../disco/disco-codec.js';
import { DiscoKeyring } from '../disco/disco-keyring.js';
import { DiscoPeers, type DiscoPeersOptions } from './disco-peers.js';
import type { Route } from './path-selector.js';

const HUB_UDP: DiscoAddress = { host: '203.0.113.1', port: 41641 };
/** Where the agent's socket appears from outside its NAT. */
const AGENT_MAPPED: DiscoAddress = { host: '198.51.100.2', port: 6000 };

interface Side {
  keys: KeyPair;
  disco: DiscoPeers;
  udpSent: { datagram: Buffer; host: string; port: number }[];
  relaySent: Buffer[];
  routes: { route: Route; remote: DiscoAddress | undefined }[];
}

/**
 * An agent and a hub on a FakeClock: the relay delivers in 30 ms, UDP in 5 ms while `udpUp`; the agent's
 * datagrams reach the hub from AGENT_MAPPED (its NAT), the hub's reach the agent when sent to AGENT_MAPPED.
 */
function pair(o: { agent?: Partial<DiscoPeersOptions>; agentUdp?: boolean } = {}) {
  const clock = new FakeClock();
  const net = { udpUp: true };
  const make = (
    self: () => Side,
    peer: () => Side,
    udpFrom: DiscoAddress,
    udpTo: DiscoAddress,
    extra: Partial<DiscoPeersOptions> = {},
    withUdp = true,
  ): Side => {
    const keys = generateKeyPair();
    const side: Side = {
      keys,
      udpSent: [],
      relaySent: [],
      routes: [],
      disco: new DiscoPeers({
        clock,
        privateKey: keys.privateKey,
        sendRelay: (_to, d) => {
          self().relaySent.push(d);
          clock.setTimer(30, () => peer().disco.receive(d, { via: 'relay', key: self().keys.publicKey }));
          return true;
        },
        ...(withUdp
          ? {
              sendUdp: (d: Buffer, host: string, port: number) => {
                self().udpSent.push({ datagram: d, host, port });
                if (net.udpUp && host === udpTo.host && port === udpTo.port)
                  clock.setTimer(5, () =>
                    peer().disco.receive(d, { via: 'udp', address: udpFrom.host, port: udpFrom.port }),
                  );
                return true;
              },
            }
          : {}),
        onRouteChange: (_k, route, remote) => self().routes.push({ route, remote }),
        ...extra,
      }),
    };
    return side;
  };
  const sides: { agent?: Side; hub?: Side } = {};
  sides.agent = make(
    () => sides.agent!,
    () => sides.hub!,
    AGENT_MAPPED,
    HUB_UDP,
    o.agent,
    o.agentUdp ?? true,
  );
  sides.hub = make(
    () => sides.hub!,
    () => sides.agent!,
    HUB_UDP,
    AGENT_MAPPED,
  );
  const agent = sides.agent;
  const hub = sides.hub;
  hub.disco.setLocalCandidates([HUB_UDP]);
  agent.disco.setLocalCandidates([{ host: '10.0.0.2', port: 5000 }, AGENT_MAPPED]);
  agent.disco.addPeer(hub.keys.publicKey);
  hub.disco.addPeer(agent.keys.publicKey);
  return { clock, net, agent, hub };
}

const routeOf = (s: Side, peer: Side) => s.disco.snapshot(peer.keys.publicKey);

describe('disco peers', () => {
  it('both sides find the direct path: call-me-maybe over the relay, pings both ways', () => {
    const { clock, agent, hub } = pair();
    clock.advance(1_000);
    expect(routeOf(agent, hub)).toMatchObject({ route: 'direct', remote: HUB_UDP });
    expect(routeOf(hub, agent)).toMatchObject({ route: 'direct', remote: AGENT_MAPPED });
    expect(agent.routes.at(-1)).toEqual({ route: 'direct', remote: HUB_UDP });
    expect(routeOf(agent, hub)?.rttMs.relayed).toBe(60);
    expect(Object.values(agent.disco.dropped).every((n) => n === 0)).toBe(true);
    expect(Object.values(hub.disco.dropped).every((n) => n === 0)).toBe(true);
  });

  it('falls back to the relay within 3 s when UDP goes silent under traffic, and comes back', () => {
    const { clock, net, agent, hub } = pair();
    clock.advance(1_000);
    const handle = agent.disco.peer(hub.keys.publicKey)!;
    const beat = () => {
      handle.noteTraffic();
      clock.setTimer(100, beat);
    };
    beat();
    clock.advance(5_000);
    net.udpUp = false;
    const silentAt = clock.now();
    while (routeOf(agent, hub)?.route === 'direct' && clock.now() - silentAt < 10_000) clock.advance(10);
    expect(clock.now() - silentAt).toBeLessThanOrEqual(3_000);
    clock.advance(30_000);
    expect(routeOf(agent, hub)?.route).toBe('relayed');
    net.udpUp = true;
    const backAt = clock.now();
    while (routeOf(agent, hub)?.route !== 'direct' && clock.now() - backAt < 20_000) clock.advance(10);
    expect(clock.now() - backAt).toBeLessThanOrEqual(10_000);
  });

  it('an agent whose NAT maps per destination gives up after the first attempts, and so does the hub', () => {
    const { clock, net, agent, hub } = pair();
    net.udpUp = false;
    agent.disco.setConditions({ stun: 'varies' });
    const handles = [agent.disco.peer(hub.keys.publicKey)!, hub.disco.peer(agent.keys.publicKey)!];
    const beat = () => {
      for (const h of handles) h.noteTraffic();
      clock.setTimer(100, beat);
    };
    beat();
    clock.advance(15_000);
    expect(agent.udpSent.length).toBeGreaterThan(0);
    expect(hub.udpSent.length).toBeGreaterThan(0);
    const [agentSent, hubSent] = [agent.udpSent.length, hub.udpSent.length];
    clock.advance(120_000);
    expect(agent.udpSent.length - agentSent).toBe(0);
    expect(hub.udpSent.length - hubSent).toBe(0);
    expect(routeOf(agent, hub)).toMatchObject({ route: 'relayed', reason: 'mapping-varies' });
    expect(routeOf(hub, agent)).toMatchObject({ route: 'relayed', candidates: 0 });
    // The agent's network changes (new candidates): both sides try again, and go direct where UDP passes.
    net.udpUp = true;
    agent.disco.setLocalCandidates([AGENT_MAPPED]);
    clock.advance(3_000);
    expect(routeOf(agent, hub)?.route).toBe('direct');
    expect(routeOf(hub, agent)?.route).toBe('direct');
  });

  it('answers a call-me-maybe with a new list at once, the same list again only after 5 s', () => {
    const { clock, agent, hub } = pair();
    clock.advance(1_000);
    // The call-me-maybes the hub sent the agent, opened with the agent's key.
    const agentKeys = new DiscoKeyring({ privateKey: agent.keys.privateKey });
    const hubCallMeMaybes = () =>
      hub.relaySent.filter((d) => {
        const r = openDisco(d, { keyFor: (k) => agentKeys.keyFor(k) });
        return r.ok && r.message.type === 'call-me-maybe';
      }).length;
    // The agent restarts (a new port) within 5 s of the hub's last call-me-maybe: answered at once.
    const before = hubCallMeMaybes();
    agent.disco.setLocalCandidates([{ host: '10.0.0.2', port: 5001 }]);
    clock.advance(100);
    expect(hubCallMeMaybes()).toBe(before + 1);
    // The same list again within 5 s: no answer (and so no loop between the two).
    agent.disco.announce(hub.keys.publicKey);
    clock.advance(100);
    expect(hubCallMeMaybes()).toBe(before + 1);
    clock.advance(5_000);
    agent.disco.announce(hub.keys.publicKey);
    clock.advance(100);
    expect(hubCallMeMaybes()).toBe(before + 2);
  });

  it('drops bad input by reason and never moves a route with it', () => {
    const { clock, agent, hub } = pair();
    clock.advance(1_000);
    const before = routeOf(hub, agent);
    const mallory = generateKeyPair();
    const hubKeyring = new DiscoKeyring({ privateKey: agent.keys.privateKey });
    const fromAgent = (m: Parameters<typeof sealDisco>[0]) =>
      sealDisco(m, { sender: agent.keys.publicKey, key: hubKeyring.keyFor(hub.keys.publicKey)! });
    const ping = fromAgent({ type: 'ping', txid: newTxid(), sentAt: clock.wallNow() });
    const evil: DiscoAddress = { host: '192.0.2.66', port: 666 };
    // a genuine ping, then replayed from elsewhere
    hub.disco.receive(ping, { via: 'udp', address: AGENT_MAPPED.host, port: AGENT_MAPPED.port });
    hub.disco.receive(ping, { via: 'udp', address: evil.host, port: evil.port });
    // relayed, but the relay's source is not the sealed sender
    hub.disco.receive(fromAgent({ type: 'ping', txid: newTxid(), sentAt: clock.wallNow() }), {
      via: 'relay',
      key: mallory.publicKey,
    });
    // a stranger's ping, a pong nobody asked for, candidates over UDP, stale and future messages
    const stranger = new DiscoKeyring({ privateKey: mallory.privateKey });
    hub.disco.receive(
      sealDisco(
        { type: 'ping', txid: newTxid(), sentAt: clock.wallNow() },
        { sender: mallory.publicKey, key: stranger.keyFor(hub.keys.publicKey)! },
      ),
      { via: 'udp', address: evil.host, port: evil.port },
    );
    hub.disco.receive(fromAgent({ type: 'pong', txid: newTxid(), sentAt: clock.wallNow(), observed: evil }), {
      via: 'udp',
      address: evil.host,
      port: evil.port,
    });
    hub.disco.receive(
      fromAgent({ type: 'call-me-maybe', txid: newTxid(), sentAt: clock.wallNow(), candidates: [evil] }),
      {
        via: 'udp',
        address: AGENT_MAPPED.host,
        port: AGENT_MAPPED.port,
      },
    );
    hub.disco.receive(fromAgent({ type: 'ping', txid: newTxid(), sentAt: clock.wallNow() - 600_000 }), {
      via: 'relay',
      key: agent.keys.publicKey,
    });
    hub.disco.receive(fromAgent({ type: 'ping', txid: newTxid(), sentAt: clock.wallNow() + 600_000 }), {
      via: 'relay',
      key: agent.keys.publicKey,
    });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 420 }), (raw) => {
        hub.disco.receive(Buffer.concat([DISCO_MAGIC, raw]), {
          via: 'udp',
          address: evil.host,
          port: evil.port,
        });
      }),
      { numRuns: 200 },
    );
    expect(hub.disco.dropped).toMatchObject({
      replay: 1,
      'sender-mismatch': 1,
      'unknown-sender': expect.any(Number),
      'unexpected-pong': 1,
      'wrong-carrier': 1,
      stale: 1,
      future: 1,
    });
    expect(hub.disco.dropped['unknown-sender']).toBeGreaterThanOrEqual(1);
    expect(hub.udpSent.some((s) => s.host === evil.host)).toBe(false); // nothing answered to the replayer
    clock.advance(1_000);
    expect(hub.udpSent.some((s) => s.host === evil.host)).toBe(false); // and it is not a candidate
    expect(routeOf(hub, agent)).toMatchObject({ route: before?.route, remote: before?.remote });
  });

  it('relay-only applies at once: relayed, no UDP sent from then on', () => {
    const { clock, agent, hub } = pair();
    clock.advance(1_000);
    agent.disco.setConditions({ policy: 'relay-only' });
    expect(routeOf(agent, hub)).toMatchObject({ route: 'relayed', reason: 'relay-only' });
    const sent = agent.udpSent.length;
    clock.advance(120_000);
    expect(agent.udpSent.length).toBe(sent);
    agent.disco.setConditions({ policy: 'auto' });
    clock.advance(1_000);
    expect(routeOf(agent, hub)?.route).toBe('direct');
  });

  it('443-only sends no UDP at all and advertises no candidates', () => {
    const { clock, agent, hub } = pair({ agent: { conditions: { egress: '443-only' } }, agentUdp: false });
    clock.advance(120_000);
    expect(agent.udpSent).toEqual([]);
    expect(routeOf(agent, hub)).toMatchObject({ route: 'relayed', reason: '443-only' });
    expect(routeOf(hub, agent)).toMatchObject({ route: 'relayed', candidates: 0 });
  });

  it('idle peers cost keepalive pace only', () => {
    const { clock, agent } = pair();
    clock.advance(30_000);
    const udp = agent.udpSent.length;
    const relay = agent.relaySent.length;
    clock.advance(100_000);
    // per 25 s, on each carrier: its ping to the hub and its pong to the hub's; a call-me-maybe a minute
    expect(agent.udpSent.length - udp).toBeLessThanOrEqual(10);
    expect(agent.relaySent.length - relay).toBeLessThanOrEqual(12);
  });
});

describe('disco peers over real UDP sockets', () => {
  const sockets: Socket[] = [];
  const discos: DiscoPeers[] = [];
  afterEach(async () => {
    for (const d of discos.splice(0)) d.close();
    await Promise.all(sockets.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  });

  it('goes direct between two sockets on loopback', async () => {
    const open = async () => {
      const s = createSocket('udp4');
      await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
      sockets.push(s);
      return s;
    };
    const [sa, sb] = [await open(), await open()];
    const [ka, kb] = [generateKeyPair(), generateKeyPair()];
    const make = (clock: Clock, keys: KeyPair, socket: Socket, other: () => DiscoPeers) => {
      const d = new DiscoPeers({
        clock,
        privateKey: keys.privateKey,
        sendRelay: (_to, datagram) => {
          setImmediate(() => other().receive(datagram, { via: 'relay', key: keys.publicKey }));
          return true;
        },
        sendUdp: (datagram, host, port) => {
          socket.send(datagram, port, host);
          return true;
        },
        onRouteChange: () => {},
      });
      socket.on('message', (msg, rinfo) =>
        d.receive(msg, { via: 'udp', address: rinfo.address, port: rinfo.port }),
      );
      discos.push(d);
      return d;
    };
    const a: DiscoPeers = make(realClock, ka, sa, () => b);
    const b: DiscoPeers = make(realClock, kb, sb, () => a);
    a.setLocalCandidates([{ host: '127.0.0.1', port: sa.address().port }]);
    b.setLocalCandidates([{ host: '127.0.0.1', port: sb.address().port }]);
    a.addPeer(kb.publicKey);
    b.addPeer(ka.publicKey);
    // Loopback candidates a call-me-maybe names are never pinged: b is told where a is (as an agent is told the
    // hub's UDP endpoint), and a learns b's address from b's pings.
    b.setConfigured(ka.publicKey, [{ host: '127.0.0.1', port: sa.address().port }]);
    await waitFor(() => a.snapshot(kb.publicKey)?.route === 'direct', 3_000, 'a direct route', 20);
    expect(a.snapshot(kb.publicKey)).toMatchObject({
      route: 'direct',
      remote: { host: '127.0.0.1', port: sb.address().port },
    });
    expect(b.snapshot(ka.publicKey)?.route).toBe('direct');
  });
});
