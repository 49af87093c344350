/**
 * The data plane's /metrics families against real components: a DERP server with in-process clients,
 * the hub node and a real WireGuard Device as the agent, on a FakeClock (as in hub-node.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair, generatePresharedKey, keyToBase64 } from '../../../shared/keys.js';
import { buildUdpPacket, parseIpv4Address } from '../../../shared/net/ip/index.js';
import { Device } from '../../../shared/net/wireguard/device.js';
import type { AdmittedPeer } from '../../control/model/admission.js';
import type { Family } from '../../ops/metrics.js';
import { DROP_REASONS } from '../derp/peer.js';
import { createDerpServer } from '../derp/server.js';
import { HubNode } from '../hub/hub-node.js';
import { derpFamilies, HubMetrics } from './data-plane-metrics.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function sample(fs: Family[], name: string, labels: Record<string, string> = {}): number {
  const f = fs.find((x) => x.name === name);
  if (!f) throw new Error(`no family ${name}`);
  const s = f.samples.find(([l]) => JSON.stringify(l) === JSON.stringify(labels));
  if (!s) throw new Error(`no sample ${name}${JSON.stringify(labels)}`);
  return s[1];
}

function world() {
  const clock = new FakeClock();
  const hubKey = generateKeyPair();
  const derp = createDerpServer({
    keyPair: hubKey,
    clock,
    admission: { isAdmitted: () => true },
    policy: { canSend: (s, d) => s.equals(hubKey.publicKey) || d.equals(hubKey.publicKey) },
  });
  const hub = new HubNode({ privateKey: hubKey.privateKey, derp, clock, lookup: async () => null });
  closers.push(() => derp.shutdown());
  closers.push(() => hub.close());
  return { clock, derp, hub, hubKey, metrics: new HubMetrics(hub) };
}

/** An agent device reaching the hub through the DERP server's in-process client. */
function agent(w: ReturnType<typeof world>, n: number) {
  const kp = generateKeyPair();
  const info: AdmittedPeer = {
    cluster: `edge-${n}`,
    publicKey: keyToBase64(kp.publicKey),
    address: `100.64.0.${n}`,
    presharedKey: keyToBase64(generatePresharedKey()),
  };
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
    onPacket: () => {},
  });
  const hubPeer = device.addPeer({
    publicKey: w.hubKey.publicKey,
    presharedKey: info.presharedKey,
    endpoint: toHub,
    allowedIps: ['100.64.0.1/32'],
  });
  closers.push(() => local.close());
  closers.push(() => device.close());
  const udp = (src: number, body: string) =>
    buildUdpPacket(
      { src, dst: parseIpv4Address('100.64.0.1'), srcPort: 1000, dstPort: 2000 },
      Buffer.from(body),
    );
  return { info, device, hubPeer, local, udp, address: parseIpv4Address(info.address) };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('derpFamilies', () => {
  it('exports every drop reason the server counts, with its value', () => {
    const w = world();
    const s = w.derp.stats as { dropped: Record<string, number> };
    s.dropped.queue_head = 4;
    const fs = derpFamilies(w.derp.stats);
    const drops = fs.find((f) => f.name === 'tunnel_relay_derp_packets_dropped_total')!;
    expect(drops.samples.map(([l]) => l.reason).sort()).toEqual([...DROP_REASONS].sort());
    expect(sample(fs, 'tunnel_relay_derp_packets_dropped_total', { reason: 'queue_head' })).toBe(4);
    expect(sample(fs, 'tunnel_relay_derp_clients')).toBe(1); // the hub's in-process client
  });

  it('counts a real policy drop', async () => {
    const w = world();
    const a = w.derp.connectLocal(generateKeyPair(), {});
    closers.push(() => a.close());
    a.send(generateKeyPair().publicKey, Buffer.from('agent to agent'));
    const fs = derpFamilies(w.derp.stats);
    expect(sample(fs, 'tunnel_relay_derp_packets_dropped_total', { reason: 'policy' })).toBe(1);
    expect(sample(fs, 'tunnel_relay_derp_bytes_dropped_total')).toBe(14);
  });
});

describe('HubMetrics', () => {
  it('counts handshakes, sessions, bytes and peer drops, and keeps them when the agent is removed', async () => {
    const w = world();
    let fs = w.metrics.families();
    expect(sample(fs, 'tunnel_relay_hub_peers')).toBe(0);
    expect(sample(fs, 'tunnel_relay_hub_handshakes_total')).toBe(0);

    const a = agent(w, 2);
    expect(w.hub.addAgent(a.info)).toBe(true);
    w.metrics.watch(w.hub.agent(a.info.publicKey)!.peer);
    a.device.send(a.udp(a.address, 'hello')); // staged; the handshake runs first
    await settle();
    expect(a.hubPeer.isSessionUp).toBe(true);
    fs = w.metrics.families();
    expect(sample(fs, 'tunnel_relay_hub_peers')).toBe(1);
    expect(sample(fs, 'tunnel_relay_hub_sessions_up')).toBe(1);
    expect(sample(fs, 'tunnel_relay_hub_handshakes_total')).toBe(1);
    const rx1 = sample(fs, 'tunnel_relay_hub_bytes_received_total');
    expect(rx1).toBeGreaterThan(0);
    expect(sample(fs, 'tunnel_relay_hub_datagrams_received_total')).toBeGreaterThanOrEqual(2);

    // A second handshake (the agent starts one after the rekey timeout) and a spoofed inner source.
    w.clock.advance(6_000);
    a.hubPeer.sendHandshakeInitiation(false);
    a.device.send(a.udp(a.address + 1, 'spoof'));
    await settle();
    fs = w.metrics.families();
    expect(sample(fs, 'tunnel_relay_hub_handshakes_total')).toBe(2);
    expect(sample(fs, 'tunnel_relay_hub_dropped_total', { stage: 'peer', reason: 'allowed-ips' })).toBe(1);
    const rx2 = sample(fs, 'tunnel_relay_hub_bytes_received_total');
    expect(rx2).toBeGreaterThan(rx1);

    // More traffic, then the agent is removed (retire first, as the data plane does on delete).
    a.device.send(a.udp(a.address + 1, 'spoof again'));
    await settle();
    w.metrics.retire(a.info.publicKey);
    w.hub.removeAgent(a.info.publicKey);
    fs = w.metrics.families();
    expect(sample(fs, 'tunnel_relay_hub_peers')).toBe(0);
    expect(sample(fs, 'tunnel_relay_hub_sessions_up')).toBe(0);
    expect(sample(fs, 'tunnel_relay_hub_dropped_total', { stage: 'peer', reason: 'allowed-ips' })).toBe(2);
    expect(sample(fs, 'tunnel_relay_hub_bytes_received_total')).toBeGreaterThan(rx2);
    expect(sample(fs, 'tunnel_relay_hub_handshakes_total')).toBe(2);
  });

  it('a handshake completed before the peer was watched counts once; watching twice counts nothing more', async () => {
    const w = world();
    const a = agent(w, 3);
    w.hub.addAgent(a.info);
    a.device.send(a.udp(a.address, 'x'));
    await settle();
    const peer = w.hub.agent(a.info.publicKey)!.peer;
    w.metrics.watch(peer);
    w.metrics.watch(peer);
    expect(sample(w.metrics.families(), 'tunnel_relay_hub_handshakes_total')).toBe(1);
  });
});
