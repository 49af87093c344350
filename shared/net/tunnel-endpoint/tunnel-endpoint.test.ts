/**
 * Two tunnel endpoints (hub role 'client', agent role 'server') joined by in-memory paths that deliver on
 * a later tick, like a network: the seams (send(packet): boolean down, onPacket up), the per-peer paths
 * WireGuard sees as one Endpoint, and a path change reaching the stream link's MTU.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { generateKeyPair, generatePresharedKey } from '../../keys.js';
import { buildIcmpEchoPacket, buildUdpPacket, ICMP_ECHO_REPLY, parseIpv4Address } from '../ip/index.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../mux/open-target.js';
import { MAX_PATH_MTU, type Path, type PathKind } from './path.js';
import { ENDPOINT_INNER_MTU, TunnelEndpoint } from './tunnel-endpoint.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';

/** A path that hands each datagram (copied: the sender's buffer is its own) to `deliver` a tick later. */
class MemoryPath implements Path {
  readonly headroom = 0;
  readonly tailroom = 0;
  up = true;
  sent = 0;
  deliver: (d: Buffer) => void = () => {};

  constructor(
    readonly kind: PathKind = 'relayed',
    readonly mtu = MAX_PATH_MTU,
  ) {}

  send(datagram: Buffer): boolean {
    if (!this.up) return false;
    this.sent++;
    const copy = Buffer.from(datagram);
    setImmediate(() => this.deliver(copy));
    return true;
  }
}

const open: TunnelEndpoint[] = [];
afterEach(() => {
  for (const e of open.splice(0)) e.close();
});

function pair() {
  const hubKeys = generateKeyPair();
  const agentKeys = generateKeyPair();
  const psk = generatePresharedKey();
  const atHub: Buffer[] = [];
  const atAgent: Buffer[] = [];
  const hub = new TunnelEndpoint({
    privateKey: hubKeys.privateKey,
    address: parseIpv4Address(HUB),
    clock: realClock,
    streams: { role: 'client' },
    onPacket: (p) => atHub.push(Buffer.from(p)),
  });
  const agent = new TunnelEndpoint({
    privateKey: agentKeys.privateKey,
    address: parseIpv4Address(AGENT),
    clock: realClock,
    streams: {
      role: 'server',
      accept: (r) => r === parseIpv4Address(HUB),
      onStream: (s: MuxStream) => {
        void readOpenRequest(s, { clock: realClock }).then(() => {
          replyOpen(s, OPEN_OK);
          s.on('data', (c: Buffer) => s.write(c));
        });
      },
    },
    onPacket: (p) => atAgent.push(Buffer.from(p)),
  });
  open.push(hub, agent);
  const toAgent = new MemoryPath();
  const toHub = new MemoryPath();
  const agentAtHub = hub.addPeer({ publicKey: agentKeys.publicKey, presharedKey: psk, address: AGENT });
  agentAtHub.paths.add(toAgent);
  const hubAtAgent = agent.addPeer({
    publicKey: hubKeys.publicKey,
    presharedKey: psk,
    address: HUB,
    paths: [toHub],
  });
  toAgent.deliver = (d) => agent.receive(d, hubAtAgent.paths);
  toHub.deliver = (d) => hub.receive(d, agentAtHub.paths);
  return { hub, agent, toAgent, toHub, agentAtHub, hubAtAgent, atHub, atAgent };
}

async function echo(s: MuxStream, text: string): Promise<string> {
  s.write(text);
  const [c] = (await new Promise((r) => s.once('data', (d: Buffer) => r([d])))) as [Buffer];
  return c.toString();
}

describe('TunnelEndpoint', () => {
  it('carries streams hub -> agent; other inner packets (UDP, ICMP but echo to the endpoint) go to onPacket', async () => {
    const w = pair();
    const s = await w.hub.streams.open(parseIpv4Address(AGENT), 'svc:1');
    expect(await echo(s, 'hello')).toBe('hello');
    const hub = parseIpv4Address(HUB);
    const agent = parseIpv4Address(AGENT);
    const udp = buildUdpPacket({ src: agent, dst: hub, srcPort: 53, dstPort: 53 }, Buffer.from('dns'));
    const ping = buildIcmpEchoPacket(
      { src: hub, dst: agent, type: ICMP_ECHO_REPLY, identifier: 1, sequence: 1 },
      Buffer.from('ping'),
    );
    expect(w.agent.send(udp)).toBe(true);
    expect(w.hub.send(ping)).toBe(true);
    await waitFor(() => w.atHub.length === 1 && w.atAgent.length === 1, 5_000, 'both delivered');
    expect(w.atHub[0]!.equals(udp)).toBe(true);
    expect(w.atAgent[0]!.equals(ping)).toBe(true);
    // The streams counted only their own datagrams; the ICMP never reached them.
    expect(w.agent.streams.stats.dropped['not-ipv4-udp']).toBe(0);
    expect(w.hub.streams.stats.dropped['wrong-port']).toBe(1);
  });

  it('WireGuard sees one Endpoint per peer: its PeerPaths, whichever path a datagram came on', async () => {
    const w = pair();
    await w.hub.streams.open(parseIpv4Address(AGENT), 'svc:1');
    expect(w.agentAtHub.peer.endpoint).toBe(w.agentAtHub.paths);
    expect(w.hubAtAgent.peer.endpoint).toBe(w.hubAtAgent.paths);
    expect(w.hub.paths.forAddress(parseIpv4Address(AGENT))).toBe(w.agentAtHub.paths);
    expect(w.hub.paths.get(w.agentAtHub.paths.publicKey.toString('base64'))).toBe(w.agentAtHub.paths);
  });

  it('a drop is false at every seam, never an exception: no route, a path that refuses, no path at all', async () => {
    const w = pair();
    const s = await w.hub.streams.open(parseIpv4Address(AGENT), 'svc:1');
    expect(await echo(s, 'up')).toBe('up');
    const hub = parseIpv4Address(HUB);
    const nowhere = buildUdpPacket(
      { src: hub, dst: parseIpv4Address('100.64.9.9'), srcPort: 1, dstPort: 1 },
      Buffer.alloc(1),
    );
    expect(w.hub.send(nowhere)).toBe(false);
    expect(w.hub.stats.drops['no-route']).toBe(1);
    w.toAgent.up = false;
    const toAgent = buildUdpPacket(
      { src: hub, dst: parseIpv4Address(AGENT), srcPort: 1, dstPort: 1 },
      Buffer.alloc(1),
    );
    expect(w.hub.send(toAgent)).toBe(false);
    expect(w.agentAtHub.peer.drops['send-failed']).toBe(1);
    // A stream's datagrams leave in the peer's send run (shared/net/buffers/send-run.ts): what the path refuses
    // at the run's end is counted by the peer (the link counts only what a layer refuses at once).
    s.write('lost');
    await waitFor(() => w.agentAtHub.peer.drops['send-failed'] > 1, 5_000, 'stream send refusal counted');
    // A peer without a path: its datagrams have nowhere to go.
    const lone = generateKeyPair();
    const added = w.hub.addPeer({
      publicKey: lone.publicKey,
      presharedKey: generatePresharedKey(),
      address: '100.64.0.3',
    });
    expect(added.paths.path).toBeUndefined();
    expect(added.paths.send(Buffer.alloc(32))).toBe(false);
    expect(w.hub.removePeer(lone.publicKey)).toBe(true);
    expect(w.hub.paths.forAddress(parseIpv4Address('100.64.0.3'))).toBeUndefined();
  });

  it("declares each peer's room from its path: WireGuard's header and tag inside the path's MTU and framing", () => {
    const w = pair();
    const framed: Path = { kind: 'relayed', mtu: 1_500, headroom: 37, tailroom: 3, send: () => true };
    w.agentAtHub.paths.add(framed);
    expect(w.hub.roomFor(parseIpv4Address(AGENT))).toEqual({ mtu: 1_468, headroom: 53, tailroom: 34 });
    // No peer at that address: the largest datagram any path carries, WireGuard's room only.
    expect(w.hub.roomFor(parseIpv4Address('100.64.0.77'))).toEqual({
      mtu: ENDPOINT_INNER_MTU,
      headroom: 16,
      tailroom: 31,
    });
  });

  it("a change of a peer's path reaches its live stream link's MTU; the stream carries on", async () => {
    const w = pair();
    const remote = parseIpv4Address(AGENT);
    const s = await w.hub.streams.open(remote, 'svc:1');
    const link = w.hub.streams.link(remote)!;
    expect(link.arq.mtu).toBe(MAX_PATH_MTU - 32 - 28);
    // The path to the agent is replaced by one with a 1,420-byte MTU (as a direct path would be).
    const narrow = new MemoryPath('relayed', 1_420);
    narrow.deliver = w.toAgent.deliver;
    w.agentAtHub.paths.add(narrow);
    expect(w.agentAtHub.paths.path).toBe(narrow);
    expect(link.arq.mtu).toBe(1_420 - 32 - 28);
    const big = Buffer.alloc(200_000, 7).toString('latin1');
    s.write(big);
    let got = 0;
    s.on('data', (c: Buffer) => {
      got += c.length;
    });
    await waitFor(() => got === big.length, 5_000, 'echoed back');
    expect(narrow.sent).toBeGreaterThan(200_000 / 1_420);
    expect(w.hub.streams.stats.linksStarted).toBe(1);
  });

  it('a path of another kind joins the peer without taking over: one current path per peer', () => {
    const w = pair();
    const direct = new MemoryPath('direct', 1_420);
    w.agentAtHub.paths.add(direct);
    expect(w.agentAtHub.paths.all.map((p) => p.kind)).toEqual(['relayed', 'direct']);
    expect(w.agentAtHub.paths.path).toBe(w.toAgent);
  });
});
