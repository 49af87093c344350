/**
 * HubStatus on its own: a hub Device and an agent Device wired to each other in memory (a link the
 * test can cut and pumps by hand), on a FakeClock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair, generatePresharedKey } from '../../../shared/keys.js';
import { EchoProber, echoReplyFor, tryParseIpv4 } from '../../../shared/net/ip/echo-prober.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import { Device } from '../../../shared/net/wireguard/device.js';
import { type ConnectionStatus, NO_CONNECTION } from '../../control/model/connection-status.js';
import { HubStatus, type HubStatusOptions, RELAY_LOSS_CONFIRM_MS, type StatusRecord } from './hub-status.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0).reverse()) c();
});

const HUB = parseIpv4Address('100.64.0.1');
const AGENT = parseIpv4Address('100.64.0.2');

function rig(opts: Partial<HubStatusOptions> = {}) {
  const clock = new FakeClock();
  const [hk, ak] = [generateKeyPair(), generateKeyPair()];
  const psk = generatePresharedKey();
  const link = { up: true, relay: true, toAgent: [] as Buffer[], toHub: [] as Buffer[] };
  const prober = new EchoProber({ clock, src: HUB, dst: AGENT });
  const toAgent = { key: 'mem:agent', send: (d: Buffer) => link.up && link.toAgent.push(Buffer.from(d)) > 0 };
  const toHub = { key: 'mem:hub', send: (d: Buffer) => link.up && link.toHub.push(Buffer.from(d)) > 0 };
  const hub = new Device({
    privateKey: hk.privateKey,
    clock,
    onPacket: (p) => {
      const ip = tryParseIpv4(p);
      if (ip) prober.onPacket(ip);
    },
  });
  const agent: Device = new Device({
    privateKey: ak.privateKey,
    clock,
    onPacket: (p) => {
      const ip = tryParseIpv4(p);
      const reply = ip && echoReplyFor(ip, AGENT);
      if (reply) agent.send(reply);
    },
  });
  closers.push(
    () => hub.close(),
    () => agent.close(),
  );
  const hubPeer = hub.addPeer({
    publicKey: ak.publicKey,
    presharedKey: psk,
    endpoint: toAgent,
    allowedIps: ['100.64.0.2/32'],
  });
  const agentPeer = agent.addPeer({
    publicKey: hk.publicKey,
    presharedKey: psk,
    endpoint: toHub,
    allowedIps: ['100.64.0.1/32'],
  });
  const rec: StatusRecord = {
    cluster: 'edge-2',
    key: ak.publicKey,
    peer: hubPeer,
    prober,
    lastRxBytes: 0,
    lastRxAt: null,
    lastProbeAt: Number.NEGATIVE_INFINITY,
  };
  const reports: Array<[string, ConnectionStatus]> = [];
  const status = new HubStatus({
    clock,
    isConnected: (k) => link.relay && k.equals(ak.publicKey),
    agents: () => [rec],
    onStatus: (c, s) => reports.push([c, s]),
    ...opts,
  });
  closers.push(() => status.close());
  hubPeer.on('handshake', () => status.onHandshake(rec));
  /** Delivers what is in flight both ways until nothing is. */
  const pump = () => {
    while (link.toAgent.length + link.toHub.length > 0) {
      for (const d of link.toAgent.splice(0)) agent.receive(d, toHub);
      for (const d of link.toHub.splice(0)) hub.receive(d, toAgent);
    }
  };
  /** The agent sends one inner packet (its first one starts the handshake). */
  const agentSends = () => {
    agentPeer.send(new EchoProber({ clock, src: AGENT, dst: HUB }).probe());
    pump();
  };
  return { clock, link, rec, status, reports, pump, agentSends, hubPeer };
}

describe('HubStatus', () => {
  it('connected needs the relay connection, a handshake and a recent datagram', () => {
    const r = rig({ deadAfterMs: 15_000 });
    expect(r.status.of(r.rec)).toEqual(NO_CONNECTION);
    r.agentSends();
    const up = r.status.of(r.rec);
    expect(up.connected).toBe(true);
    expect(up.path).toBe('relayed');
    expect(up.lastHandshake).toBe(r.hubPeer.lastHandshakeAt);
    expect(up.bytesIn).toBe(r.hubPeer.rxBytes);
    expect(up.bytesOut).toBe(r.hubPeer.txBytes);
    expect(up.bytesIn).toBeGreaterThan(0);
    // The handshake was reported at once (the responder's, before its first transport datagram).
    expect(r.reports.map(([c]) => c)).toEqual(['edge-2']);
    r.link.relay = false;
    expect(r.status.of(r.rec).connected).toBe(false);
    expect(r.status.of(r.rec).path).toBe('none');
  });

  it('says direct only while the traffic goes direct alone, not while a copy also goes over the relay', () => {
    const r = rig({ deadAfterMs: 15_000 });
    r.agentSends();
    const paths = { path: { kind: 'direct' as const }, duplicating: true };
    const rec: StatusRecord = { ...r.rec, paths };
    expect(r.status.of(rec).path).toBe('relayed');
    paths.duplicating = false;
    expect(r.status.of(rec).path).toBe('direct');
    r.link.relay = false; // a direct agent needs no relay connection to count as connected
    expect(r.status.of(rec)).toMatchObject({ connected: true, path: 'direct' });
  });

  it('a relayed agent whose relay connection closes is reported not connected at once', () => {
    const r = rig();
    r.agentSends();
    r.reports.length = 0;
    r.link.relay = false;
    r.status.relayGone(r.rec);
    expect(r.reports).toEqual([['edge-2', expect.objectContaining({ connected: false, path: 'none' })]]);
  });

  it('a direct agent that loses its relay connection is connected again only once it answers a probe sent after', () => {
    const r = rig({ statusIntervalMs: 60_000 });
    r.agentSends();
    const paths = { path: { kind: 'direct' as const } };
    const killed: StatusRecord = { ...r.rec, paths };
    r.link.relay = false;
    r.link.up = false; // killed: its sockets closed together, nothing answers
    r.status.relayGone(killed);
    // Shown disconnected at once, and still after the confirm time: nothing answered (it never flaps back).
    expect(r.status.of(killed).connected).toBe(false);
    r.reports.length = 0;
    r.clock.advance(RELAY_LOSS_CONFIRM_MS + 20);
    expect(r.reports).toEqual([['edge-2', expect.objectContaining({ connected: false, path: 'none' })]]);

    const r2 = rig({ statusIntervalMs: 60_000 });
    r2.agentSends();
    const alive: StatusRecord = { ...r2.rec, paths };
    r2.link.relay = false; // a relay blip: the direct path still answers the probe relayGone sends
    r2.status.relayGone(alive);
    r2.pump();
    r2.clock.advance(RELAY_LOSS_CONFIRM_MS + 20);
    expect(r2.status.of(alive)).toMatchObject({ connected: true, path: 'direct' });
  });

  it('an agent silent for deadAfterMs is not connected; its next datagram makes it connected again', () => {
    const r = rig({ deadAfterMs: 4_000, statusIntervalMs: 60_000 });
    r.agentSends();
    // A look notes the bytes received since the last one (the status timer looks every statusIntervalMs).
    expect(r.status.of(r.rec).connected).toBe(true);
    r.link.up = false;
    r.clock.advance(3_999);
    expect(r.status.of(r.rec).connected).toBe(true);
    r.clock.advance(1);
    expect(r.status.of(r.rec).connected).toBe(false);
    r.link.up = true;
    r.agentSends();
    expect(r.status.of(r.rec).connected).toBe(true);
  });

  it('reports every statusIntervalMs and probes a connected agent at most every probeIntervalMs', () => {
    const r = rig({ statusIntervalMs: 1_000, probeIntervalMs: 3_000, deadAfterMs: 60_000 });
    // Not connected yet: reported, not probed.
    r.clock.advance(1_000);
    expect(r.reports.length).toBe(1);
    expect(r.rec.prober.sent).toBe(0);
    r.agentSends();
    r.reports.length = 0;
    const sentAfterTick: number[] = [];
    for (let i = 0; i < 4; i++) {
      r.clock.advance(i === 0 ? 1_000 : 993); // a tick: a probe may be queued
      r.clock.advance(7); // its reply comes back 7 ms later
      r.pump();
      sentAfterTick.push(r.rec.prober.sent);
    }
    expect(r.reports.length).toBe(4);
    expect(sentAfterTick).toEqual([1, 1, 1, 2]);
    expect(r.rec.prober.received).toBe(2);
    expect(r.status.of(r.rec).rttMs).toBe(7);
  });

  it('an idle agent (its own probes every 25 s) stays connected and is not probed while they arrive', () => {
    const r = rig({
      statusIntervalMs: 1_000,
      probeIntervalMs: 5_000,
      deadAfterMs: 15_000,
      idleProbeMs: 25_000,
    });
    const paths = { path: { kind: 'relayed' as const }, active: false };
    const rec: StatusRecord = { ...r.rec, paths };
    const status = new HubStatus({
      clock: r.clock,
      isConnected: () => true,
      agents: () => [rec],
      statusIntervalMs: 1_000,
      probeIntervalMs: 5_000,
      deadAfterMs: 15_000,
      idleProbeMs: 25_000,
    });
    r.status.close();
    closers.push(() => status.close());
    r.agentSends();
    status.of(rec);
    // One probe for a first RTT, then none while the agent's own probes keep coming.
    r.clock.advance(1_000);
    r.pump();
    expect(rec.prober.sent).toBe(1);
    expect(status.of(rec).rttMs).not.toBeNull();
    for (let i = 0; i < 4; i++) {
      r.clock.advance(24_000);
      expect(status.of(rec).connected).toBe(true);
      r.clock.advance(1_000);
      r.agentSends(); // the agent's idle probe
      r.pump();
    }
    expect(rec.prober.sent).toBe(1);
    // The agent went quiet: the hub probes once nothing came for 25 + 5 s, and gives up after 15 + 25 s.
    r.link.up = false;
    r.clock.advance(31_000);
    expect(rec.prober.sent).toBeGreaterThan(1);
    expect(status.of(rec).connected).toBe(true);
    r.clock.advance(10_000); // the status tick noted the last datagram up to 1 s after it came
    expect(status.of(rec).connected).toBe(false);
    // Under traffic the agent is probed every 5 s and gone 15 s after its last datagram.
    paths.active = true;
    r.link.up = true;
    r.agentSends();
    const sent = rec.prober.sent;
    r.clock.advance(15_000);
    expect(rec.prober.sent).toBeGreaterThan(sent);
  });

  it('close stops the timer and report is silent', () => {
    const r = rig({ statusIntervalMs: 1_000 });
    r.agentSends();
    const n = r.reports.length;
    r.status.close();
    r.clock.advance(5_000);
    r.status.report(r.rec);
    expect(r.reports.length).toBe(n);
    expect(r.status.of(r.rec).connected).toBe(true);
  });
});
