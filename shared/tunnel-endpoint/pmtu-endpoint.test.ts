/**
 * The direct path's MTU search between two tunnel endpoints on real UDP sockets on loopback (the relayed path
 * an in-process hand-over, as in disco-endpoint.test.ts): the MTU climbs to the largest step loopback carries,
 * the stream link's segments follow it, a black hole (datagrams over 1,500 bytes silently dropped at the
 * sockets) takes it back to the base, and an echo stream carries on byte for byte across that and across
 * direct -> relayed -> direct switches of different MTUs. Short timers so the test takes seconds.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../clock.js';
import { isDiscoMessage } from '../disco/disco-codec.js';
import { parseIpv4Address } from '../ip/index.js';
import { generateKeyPair, generatePresharedKey, type KeyPair } from '../keys.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../mux/open-target.js';
import { DEFAULT_DIRECT_MTU } from './direct-path.js';
import type { Path } from './path.js';
import type { PathTimers } from './path-timers.js';
import type { PeerPaths } from './peer-paths.js';
import { PMTU_IP_UDP_HEADROOM, PMTU_OUTER_STEPS } from './pmtu-probes.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';
import { UdpTransport } from './udp-transport.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';
const LO = '127.0.0.1';
const FAST: Partial<PathTimers> = {
  activeMs: 1_000,
  directPingMs: 100,
  candidatePingMs: 200,
  backgroundPingMs: 3_000,
  idlePingMs: 2_500,
  trustMs: 250,
  pingTimeoutMs: 300,
  confirmMs: 500,
  relayPingMs: 500,
  stableMs: 3_000,
  holdDownMaxMs: 800,
};
const PMTU = { probeTimeoutMs: 150, maxProbes: 3, confirmMs: 300, raiseMs: 60_000 };
const LOOPBACK_TOP = (PMTU_OUTER_STEPS.at(-1) ?? 0) - PMTU_IP_UDP_HEADROOM;

/** What the sockets let through: nothing when closed, and no datagram over maxSize. */
interface Gate {
  open: boolean;
  maxSize: number;
  largest: number;
}

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function until(what: string, pred: () => boolean, ms: number): Promise<number> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - start;
}

interface Node {
  keys: KeyPair;
  endpoint: TunnelEndpoint;
  udp: UdpTransport;
  paths?: PeerPaths;
}

function echoServer(s: MuxStream): void {
  s.on('error', () => {}); // closed with the endpoint at the end
  void readOpenRequest(s, { clock: realClock }).then(() => {
    replyOpen(s, OPEN_OK);
    s.pipe(s);
  });
}

async function node(address: string, role: 'client' | 'server', gate: Gate): Promise<Node> {
  const keys = generateKeyPair();
  const udp = await UdpTransport.open({ host: LO, port: 0 });
  closers.push(() => udp.close());
  const gated = {
    send: (d: Buffer, host: string, port: number) => {
      if (!gate.open || d.length > gate.maxSize) return true; // lost on the way
      gate.largest = Math.max(gate.largest, d.length);
      return udp.send(d, host, port);
    },
  };
  const endpoint = new TunnelEndpoint({
    privateKey: keys.privateKey,
    address: parseIpv4Address(address),
    clock: realClock,
    udp: gated,
    disco: { timers: FAST },
    pmtu: { timers: PMTU },
    streams: role === 'server' ? { role, onStream: echoServer } : { role },
    onPacket: () => {},
  });
  closers.push(() => endpoint.close());
  udp.listen({
    onWireGuard: (d, from) => endpoint.receiveFrom(d, from),
    onDisco: (d, from) => endpoint.receiveDisco(d, { via: 'udp', address: from.address, port: from.port }),
  });
  return { keys, udp, endpoint };
}

function relayed(from: Node, to: () => Node): Path {
  return {
    kind: 'relayed',
    mtu: 65_535,
    headroom: 0,
    tailroom: 0,
    send: (d) => {
      const copy = Buffer.from(d);
      setImmediate(() => {
        const peer = to();
        if (isDiscoMessage(copy))
          peer.endpoint.receiveDisco(copy, { via: 'relay', key: from.keys.publicKey });
        else if (peer.paths) peer.endpoint.receive(copy, peer.paths);
      });
      return true;
    },
  };
}

async function pair(gate: Gate): Promise<{ hub: Node; agent: Node }> {
  const hub = await node(HUB, 'client', gate);
  const agent = await node(AGENT, 'server', gate);
  const psk = generatePresharedKey();
  const common = { presharedKey: psk, disco: true };
  hub.paths = hub.endpoint.addPeer({
    ...common,
    publicKey: agent.keys.publicKey,
    address: AGENT,
    paths: [relayed(hub, () => agent)],
  }).paths;
  agent.paths = agent.endpoint.addPeer({
    ...common,
    publicKey: hub.keys.publicKey,
    address: HUB,
    paths: [relayed(agent, () => hub)],
  }).paths;
  hub.endpoint.disco?.setLocalCandidates([{ host: LO, port: hub.udp.port }]);
  agent.endpoint.disco?.setLocalCandidates([{ host: LO, port: agent.udp.port }]);
  return { hub, agent };
}

/** Writes random bytes through an echo stream until stopped; hashes what went out and what came back. */
function pump(s: MuxStream) {
  const out = createHash('sha256');
  const back = createHash('sha256');
  let sent = 0;
  let received = 0;
  let running = true;
  s.on('data', (d: Buffer) => {
    received += d.length;
    back.update(d);
  });
  const errors: Error[] = [];
  s.on('error', (e) => errors.push(e));
  const write = (): void => {
    while (running) {
      const chunk = randomBytes(16_384);
      out.update(chunk);
      sent += chunk.length;
      if (!s.write(chunk)) return void s.once('drain', write);
    }
  };
  write();
  return {
    errors,
    received: () => received,
    async finish(): Promise<{ sent: string; back: string }> {
      running = false;
      await until('echo drained', () => received === sent, 30_000);
      return { sent: out.digest('hex'), back: back.digest('hex') };
    },
  };
}

const directMtu = (n: Node) => (n.paths?.get('direct')?.mtu ?? 0) as number;

describe('path MTU search on the direct path (real UDP on loopback)', () => {
  it('climbs to the largest loopback step; the stream link follows; a black hole and path switches lose no byte', async () => {
    const gate: Gate = { open: true, maxSize: 65_535, largest: 0 };
    const { hub, agent } = await pair(gate);
    const s = await hub.endpoint.streams.open(parseIpv4Address(AGENT), 'echo:1');
    const p = pump(s);
    const link = () => hub.endpoint.streams.link(parseIpv4Address(AGENT));

    await until('direct', () => hub.paths?.path?.kind === 'direct' && !hub.paths.duplicating, 5_000);
    await until(
      'jumbo both ways',
      () => directMtu(hub) === LOOPBACK_TOP && directMtu(agent) === LOOPBACK_TOP,
      5_000,
    );
    // The link's datagrams follow the path: inner MTU less its IPv4/UDP header.
    expect(link()?.arq.mtu).toBe(hub.endpoint.roomFor(parseIpv4Address(AGENT)).mtu - 28);
    const before = p.received();
    await until('bytes move at the large MTU', () => p.received() > before + 1_000_000, 10_000);
    expect(gate.largest).toBeGreaterThan(DEFAULT_DIRECT_MTU);

    // Black hole: over 1,500 bytes vanish. Confirmation probes are lost, the MTU goes back to the base.
    gate.maxSize = 1_500;
    const dropped = await until('base after black hole', () => directMtu(hub) === DEFAULT_DIRECT_MTU, 5_000);
    expect(hub.endpoint.pmtu?.stats().blackHoles).toBeGreaterThanOrEqual(1);
    expect(dropped).toBeLessThan(3_000);
    expect(hub.paths?.path?.kind).toBe('direct');
    const atBase = p.received();
    await until('bytes move at the base', () => p.received() > atBase + 500_000, 10_000);

    // UDP gone: relayed (64 KiB); UDP back without the limit: direct at the base, then the search climbs again.
    gate.open = false;
    await until('relayed', () => hub.paths?.path?.kind === 'relayed', 5_000);
    expect(link()?.arq.mtu).toBe(65_535 - 32 - 28);
    const atRelay = p.received();
    await until('bytes move relayed', () => p.received() > atRelay + 500_000, 10_000);
    gate.maxSize = 65_535;
    gate.open = true;
    await until('direct again', () => hub.paths?.path?.kind === 'direct' && !hub.paths.duplicating, 10_000);
    await until('jumbo again', () => directMtu(hub) === LOOPBACK_TOP, 5_000);

    const r = await p.finish();
    expect(r.back).toBe(r.sent);
    expect(p.errors).toEqual([]);
    expect(link()?.closed).toBe(false);
    const disco = hub.endpoint.disco?.stats;
    expect(disco?.probeAcks).toBeGreaterThan(0);
    expect(agent.endpoint.disco?.stats.probes).toBeGreaterThan(0);
  }, 60_000);

  it('a first hop of 1,500 bytes keeps the base: no probe goes out', async () => {
    const gate: Gate = { open: true, maxSize: 65_535, largest: 0 };
    const hub = await node(HUB, 'client', gate);
    // The same wiring, but the first hop says 1,500 (as a veth at 1,500 would).
    hub.endpoint.close();
    const limited = new TunnelEndpoint({
      privateKey: hub.keys.privateKey,
      address: parseIpv4Address(HUB),
      clock: realClock,
      udp: { send: (d, host, port) => hub.udp.send(d, host, port) },
      disco: { timers: FAST },
      pmtu: { timers: PMTU, firstHopMtu: () => 1_500 },
      streams: { role: 'client' },
      onPacket: () => {},
    });
    closers.push(() => limited.close());
    const agent = await node(AGENT, 'server', gate);
    const l: Node = { keys: hub.keys, udp: hub.udp, endpoint: limited };
    hub.udp.listen({
      onWireGuard: (d, from) => limited.receiveFrom(d, from),
      onDisco: (d, from) => limited.receiveDisco(d, { via: 'udp', address: from.address, port: from.port }),
    });
    const psk = generatePresharedKey();
    l.paths = limited.addPeer({
      publicKey: agent.keys.publicKey,
      presharedKey: psk,
      address: AGENT,
      paths: [relayed(l, () => agent)],
      disco: true,
    }).paths;
    agent.paths = agent.endpoint.addPeer({
      publicKey: hub.keys.publicKey,
      presharedKey: psk,
      address: HUB,
      paths: [relayed(agent, () => l)],
      disco: true,
    }).paths;
    limited.disco?.setLocalCandidates([{ host: LO, port: hub.udp.port }]);
    agent.endpoint.disco?.setLocalCandidates([{ host: LO, port: agent.udp.port }]);
    const s = await limited.streams.open(parseIpv4Address(AGENT), 'echo:1');
    const p = pump(s);
    await until('direct', () => l.paths?.path?.kind === 'direct', 5_000);
    // The agent's side climbs (its first hop is loopback); the limited side never probes.
    await until('agent jumbo', () => directMtu(agent) === LOOPBACK_TOP, 5_000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(directMtu(l)).toBe(DEFAULT_DIRECT_MTU);
    expect(limited.pmtu?.stats().probes).toBe(0);
    const r = await p.finish();
    expect(r.back).toBe(r.sent);
  }, 30_000);
});
