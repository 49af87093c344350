/**
 * A tunnel endpoint on a real UDP transport (loopback) with stock WireGuard peers (UdpBind: a bare device
 * on its own socket): the first authenticated datagram opens the peer's direct path and makes it current
 * (the stream link's MTU follows it); the path follows the peer to a new address only once a datagram
 * from there authenticates; garbage and replays from elsewhere never move it; a relayed arrival takes
 * the peer back to its relayed path. And the transport itself: disco apart from WireGuard, refusals when closed
 * or backed up.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { UdpBind } from '../../../test/helpers/udp-bind.js';
import { waitFor } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { generateKeyPair, generatePresharedKey, type KeyPair } from '../../keys.js';
import { DISCO_MAGIC } from '../disco/disco-codec.js';
import { buildIcmpEchoPacket, ICMP_ECHO_REQUEST, parseIpv4Address } from '../ip/index.js';
import { Device } from '../wireguard/device.js';
import { DEFAULT_DIRECT_MTU, DirectPath } from './direct-path.js';
import type { Path } from './path.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';
import { UdpTransport } from './udp-transport.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';
const LO = '127.0.0.1';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const until = (pred: () => boolean, ms = 5_000) => waitFor(pred, ms);

/** The hub side: an endpoint fed by a UDP transport, with one peer (no relayed path unless given). */
async function hubWith(agent: KeyPair, psk: Buffer, relayed?: Path) {
  const hubKeys = generateKeyPair();
  const udp = await UdpTransport.open({ host: LO, port: 0 });
  closers.push(() => udp.close());
  const hub = new TunnelEndpoint({
    privateKey: hubKeys.privateKey,
    address: parseIpv4Address(HUB),
    clock: realClock,
    udp,
    streams: { role: 'client' },
    onPacket: (p, peer) => {
      // echo: swap addresses of an ICMP echo request and answer
      const reply = Buffer.from(p);
      reply.set(p.subarray(16, 20), 12);
      reply.set(p.subarray(12, 16), 16);
      reply[20] = 0;
      peer.send(reply);
    },
  });
  closers.push(() => hub.close());
  udp.listen({ onWireGuard: (d, from) => hub.receiveFrom(d, from) });
  const { paths } = hub.addPeer({
    publicKey: agent.publicKey,
    presharedKey: psk,
    address: AGENT,
    ...(relayed ? { paths: [relayed] } : {}),
  });
  return { hub, hubKeys, udp, paths };
}

/** A stock WireGuard peer of the hub on its own UDP socket. */
async function stockPeer(keys: KeyPair, hubKey: Buffer, psk: Buffer, hubPort: number) {
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
    endpoint: bind.to(LO, hubPort),
    allowedIps: [`${HUB}/32`],
  });
  const ping = (seq: number) => peer.send(echo(seq));
  return { bind, peer, got, ping };
}

function echo(seq: number): Buffer {
  const src = parseIpv4Address(AGENT);
  const dst = parseIpv4Address(HUB);
  return buildIcmpEchoPacket(
    { src, dst, type: ICMP_ECHO_REQUEST, identifier: 1, sequence: seq },
    Buffer.from('direct'),
  );
}

function directRemote(path: Path | undefined): { host: string; port: number } | null {
  return path instanceof DirectPath ? path.remote : null;
}

describe('TunnelEndpoint over UDP', () => {
  it('opens the direct path on the first authenticated datagram and answers there', async () => {
    const agent = generateKeyPair();
    const psk = generatePresharedKey();
    const h = await hubWith(agent, psk);
    expect(h.paths.path).toBeUndefined();
    const a = await stockPeer(agent, h.hub.publicKey, psk, h.udp.port);
    a.ping(1);
    await until(() => a.got.length === 1);
    expect(h.paths.path?.kind).toBe('direct');
    expect(directRemote(h.paths.path)).toEqual({ host: LO, port: a.bind.port });
    expect(h.hub.direct).toMatchObject({ opened: 1, roamed: 0 });
    expect(h.hub.roomFor(parseIpv4Address(AGENT)).mtu).toBe(DEFAULT_DIRECT_MTU - 32);
  });

  it('follows the peer to a new address only after a datagram from there authenticates', async () => {
    const agent = generateKeyPair();
    const psk = generatePresharedKey();
    const h = await hubWith(agent, psk);
    const a = await stockPeer(agent, h.hub.publicKey, psk, h.udp.port);
    a.ping(1);
    await until(() => a.got.length === 1);
    // Garbage from another address (short, and of an initiation's size): the path stays.
    const other = dgram.createSocket('udp4');
    closers.push(() => other.close());
    const otherGot: Buffer[] = [];
    other.on('message', (m) => otherGot.push(m));
    await new Promise<void>((r) => other.bind(0, LO, () => r()));
    for (const d of [Buffer.from('garbage!'), Buffer.alloc(148, 1)]) other.send(d, h.udp.port, LO);
    await new Promise((r) => setTimeout(r, 100));
    expect(directRemote(h.paths.path)?.port).toBe(a.bind.port);
    // The same key from another socket (the peer roamed): its handshake authenticates, the path moves.
    const b = await stockPeer(agent, h.hub.publicKey, psk, h.udp.port);
    b.ping(2);
    await until(() => b.got.length === 1);
    expect(directRemote(h.paths.path)?.port).toBe(b.bind.port);
    expect(h.hub.direct).toMatchObject({ opened: 1, roamed: 1 });
    expect(otherGot).toEqual([]);
  });

  it('a relayed arrival takes the peer back to its relayed path', async () => {
    const agent = generateKeyPair();
    const psk = generatePresharedKey();
    const relayedSent: Buffer[] = [];
    const relayed: Path = {
      kind: 'relayed',
      mtu: 65_535,
      headroom: 0,
      tailroom: 0,
      send: (d) => relayedSent.push(Buffer.from(d)) > 0,
    };
    const h = await hubWith(agent, psk, relayed);
    expect(h.paths.path).toBe(relayed);
    // The peer: a bare device whose datagrams go over UDP, or (viaRelay) straight to the hub as relayed.
    const sock = dgram.createSocket('udp4');
    closers.push(() => sock.close());
    await new Promise<void>((r) => sock.bind(0, LO, () => r()));
    let viaRelay = false;
    const replies: Buffer[] = [];
    const hubEnd = {
      key: 'hub',
      send: (d: Buffer) => {
        if (viaRelay) h.hub.receive(Buffer.from(d), h.paths);
        else sock.send(d, h.udp.port, LO);
        return true;
      },
    };
    const device = new Device<typeof hubEnd>({
      privateKey: agent.privateKey,
      onPacket: (p) => replies.push(Buffer.from(p)),
    });
    closers.push(() => device.close());
    sock.on('message', (m) => device.receive(m, hubEnd));
    device.addPeer({
      publicKey: h.hub.publicKey,
      presharedKey: psk,
      endpoint: hubEnd,
      allowedIps: [`${HUB}/32`],
    });
    device.send(echo(1));
    await until(() => replies.length === 1);
    expect(h.paths.path?.kind).toBe('direct');
    expect(relayedSent).toEqual([]);
    viaRelay = true;
    device.send(echo(2));
    await until(() => relayedSent.length === 1);
    expect(h.paths.path).toBe(relayed);
  });
});

describe('UdpTransport', () => {
  it('refuses sends when backed up or closed, and counts datagrams nobody listens for', async () => {
    const t = await UdpTransport.open({ host: LO, port: 0, maxQueuedSends: 0 });
    expect(t.send(Buffer.from('x'), LO, t.port)).toBe(false);
    expect(t.stats.refused).toBe(1);
    const u = await UdpTransport.open({ host: LO, port: 0 });
    expect(u.send(Buffer.from('to nobody'), LO, t.port)).toBe(true);
    await until(() => t.stats.unclaimed === 1);
    await t.close();
    await u.close();
    expect(u.send(Buffer.from('x'), LO, 9)).toBe(false);
    expect(u.stats).toMatchObject({ sent: 1, refused: 1 });
  });

  it('hands disco messages to onDisco, everything else to WireGuard; counts disco nobody takes', async () => {
    const t = await UdpTransport.open({ host: LO, port: 0 });
    const u = await UdpTransport.open({ host: LO, port: 0 });
    closers.push(
      () => t.close(),
      () => u.close(),
    );
    const wg: Buffer[] = [];
    const disco: Buffer[] = [];
    t.listen({ onWireGuard: (d) => wg.push(d), onDisco: (m) => disco.push(m) });
    const probe = Buffer.concat([DISCO_MAGIC, Buffer.alloc(120, 7)]);
    u.send(probe, LO, t.port);
    u.send(Buffer.from([4, 0, 0, 0, 1, 2, 3]), LO, t.port);
    await until(() => wg.length + disco.length === 2);
    expect(disco).toEqual([probe]);
    expect(wg.map((d) => d[0])).toEqual([4]);
    t.listen({ onWireGuard: (d) => wg.push(d) });
    u.send(probe, LO, t.port);
    await until(() => t.stats.discoUnhandled === 1);
    expect(wg).toHaveLength(1);
  });

  it('names the bind error', async () => {
    const t = await UdpTransport.open({ host: LO, port: 0 });
    closers.push(() => t.close());
    await expect(UdpTransport.open({ host: LO, port: t.port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});
