/**
 * Abuse replay: bad input on the hub's WireGuard UDP port (`tunnel-relay serve --udp-port`). A real
 * WireGuard peer (our Device on its own UDP socket, registered through the relay's API) holds a session
 * with the hub; then truncated, random and disco-looking datagrams, handshakes to the wrong key or from an
 * unknown key, transport packets with a forged body, replays of the peer's captured transport packets and
 * the same replays from another address (a spoofed source) hit the port. Every one is dropped and counted
 * by reason on /metrics, none moves the peer's direct path (no roam, nothing sent to the spoofing socket),
 * and the peer is still answered at its own address afterwards. Through the real relay process.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADDRESS } from '../../relay/control/store/addresses.js';
import { generateKeyPair, type KeyPair } from '../../shared/keys.js';
import { DISCO_MAGIC } from '../../shared/net/disco/disco-codec.js';
import {
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from '../../shared/net/ip/icmp.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import { parseIpv4Packet } from '../../shared/net/ip/ipv4.js';
import { Device, type Endpoint, type Peer } from '../../shared/net/wireguard/device.js';
import { buildIfStale, cleanup } from '../cli-harness.js';
import { waitFor } from '../helpers/wait.js';
import {
  metrics,
  registerPeer,
  serveWithUdp,
  type Tunnel,
  type UdpRelay,
  udpCounter,
} from '../hub-udp-fixture.js';
import { abuseScale } from './scale.js';

const HOST = '127.0.0.1';
/** The hub as the capture's peers see it: each UdpPeer has its own, sending from its socket. */
interface HubEndpoint extends Endpoint {
  readonly key: 'hub';
}

/** A WireGuard peer of the hub on its own UDP socket; every datagram it sends is kept (the capture). */
class UdpPeer {
  readonly socket = dgram.createSocket('udp4');
  readonly sent: Buffer[] = [];
  readonly received: Buffer[] = [];
  readonly replies: number[] = [];
  readonly device: Device<HubEndpoint>;
  readonly peer: Peer<HubEndpoint>;
  readonly #src: number;
  readonly #hub: HubEndpoint;

  constructor(keys: KeyPair, hubKey: Buffer, o: { psk?: string; address: string; port: number }) {
    this.#src = parseIpv4Address(o.address);
    const hub: HubEndpoint = {
      key: 'hub',
      send: (d) => {
        this.sent.push(Buffer.from(d));
        this.socket.send(d, o.port, HOST);
        return true;
      },
    };
    this.#hub = hub;
    this.device = new Device<HubEndpoint>({
      privateKey: keys.privateKey,
      onPacket: (p) => {
        const ip = parseIpv4Packet(Buffer.from(p));
        const e = parseIcmpEcho(ip);
        if (e.type === ICMP_ECHO_REPLY) this.replies.push(e.sequence);
      },
    });
    this.peer = this.device.addPeer({
      publicKey: hubKey,
      ...(o.psk ? { presharedKey: o.psk } : {}),
      endpoint: hub,
      allowedIps: [`${HUB_ADDRESS}/32`],
    });
    this.socket.on('message', (m) => {
      this.received.push(m);
      this.device.receive(m, this.#hub);
    });
  }

  async bind(): Promise<this> {
    await new Promise<void>((r) => this.socket.bind(0, HOST, () => r()));
    return this;
  }

  ping(seq: number): void {
    const dst = parseIpv4Address(HUB_ADDRESS);
    this.device.send(
      buildIcmpEchoPacket(
        { src: this.#src, dst, type: ICMP_ECHO_REQUEST, identifier: 7, sequence: seq },
        Buffer.from('x'),
      ),
    );
  }

  /** Captured transport data packets that carried a packet (not keepalives). */
  get transportData(): Buffer[] {
    return this.sent.filter((d) => d.readUInt32LE(0) === 4 && d.length > 32);
  }

  close(): void {
    this.device.close();
    this.socket.close();
  }
}

/** A socket that only sends raw datagrams to the hub port and records what comes back. */
async function rawSocket(): Promise<{
  socket: dgram.Socket;
  got: Buffer[];
  send(d: Buffer, port: number): void;
}> {
  const socket = dgram.createSocket('udp4');
  const got: Buffer[] = [];
  socket.on('message', (m) => got.push(m));
  await new Promise<void>((r) => socket.bind(0, HOST, () => r()));
  return { socket, got, send: (d, port) => socket.send(d, port, HOST) };
}

/** Lets the relay read what was sent so far (a burst past the socket's receive buffer is lost in the kernel). */
const breathe = (i: number) => (i % 20 === 19 ? new Promise((r) => setTimeout(r, 5)) : undefined);

let relay: UdpRelay;
let tunnel: Tunnel;
let legit: UdpPeer;
const closers: Array<() => void> = [];
const scale = abuseScale();

beforeAll(async () => {
  buildIfStale();
  relay = await serveWithUdp(HOST);
  const reg = await registerPeer(relay, 'udp-abuse');
  tunnel = reg.tunnel;
  legit = await new UdpPeer(reg.keys, Buffer.from(tunnel.hubPublicKey, 'base64'), {
    psk: tunnel.presharedKey,
    address: tunnel.address.replace(/\/32$/, ''),
    port: relay.udpPort,
  }).bind();
  closers.push(() => legit.close());
  for (let seq = 1; seq <= 3; seq++) legit.ping(seq);
  await waitFor(() => legit.replies.length === 3, 10_000, 'echo replies from the hub over UDP');
}, 60_000);

afterAll(async () => {
  for (const c of closers.splice(0)) c();
  await cleanup();
});

/** Disco messages the hub dropped, all reasons together. */
function discoDrops(m: Map<string, number>): number {
  let sum = 0;
  for (const [k, v] of m) if (k.startsWith('tunnel_relay_disco_dropped_total{')) sum += v;
  return sum;
}

/** Waits until the counter moved by `by` from `before` (drops are counted as the datagrams arrive). */
async function dropsReach(reason: string, before: number, by: number): Promise<number> {
  let now = before;
  await waitFor(
    async () => {
      now = udpCounter(await metrics(relay), 'datagrams_dropped_total', reason);
      return now - before >= by;
    },
    10_000,
    `${by} drops counted as ${reason}`,
  );
  return now - before;
}

describe('abuse: bad input on the hub UDP port', () => {
  it('truncated, random and disco-looking datagrams are dropped as malformed / bad-type / by the disco side', async () => {
    const m0 = await metrics(relay);
    const raw = await rawSocket();
    closers.push(() => raw.socket.close());
    const n = 20 * scale;
    const whole = [legit.sent[0]!, legit.transportData[0]!]; // an initiation and a transport packet
    for (let i = 0; i < n; i++) {
      const d = whole[i % 2]!;
      raw.send(d.subarray(0, i % 2 === 0 ? 4 + (i % 140) : 4 + (i % 28)), relay.udpPort);
      const junk = randomBytes(4 + (i % 300));
      junk[0] = 5 + (junk[0]! % 250); // a type word WireGuard does not have
      raw.send(junk, relay.udpPort);
      await breathe(i);
    }
    expect(await dropsReach('malformed', udpCounter(m0, 'datagrams_dropped_total', 'malformed'), n)).toBe(n);
    expect(await dropsReach('bad-type', udpCounter(m0, 'datagrams_dropped_total', 'bad-type'), n)).toBe(n);
    // Disco-looking datagrams (the magic, then junk) are not WireGuard: the hub's disco side drops them (no
    // peer sealed them), counted there; test/abuse/disco.test.ts replays disco attacks one by one.
    const disco0 = discoDrops(m0);
    for (let i = 0; i < n; i++) {
      raw.send(Buffer.concat([DISCO_MAGIC, randomBytes(100 + i)]), relay.udpPort);
      await breathe(i);
    }
    await waitFor(async () => discoDrops(await metrics(relay)) - disco0 >= n, 10_000, `${n} disco drops`);
    expect(discoDrops(await metrics(relay)) - disco0).toBe(n);
    expect(udpCounter(await metrics(relay), 'datagrams_dropped_total', 'no-disco')).toBe(
      udpCounter(m0, 'datagrams_dropped_total', 'no-disco'),
    );
    expect(raw.got).toEqual([]);
  });

  it('handshakes to the wrong hub key fail mac1; from an unregistered key, unknown-peer', async () => {
    const m0 = await metrics(relay);
    const hubKey = Buffer.from(tunnel.hubPublicKey, 'base64');
    const wrongHub = await new UdpPeer(generateKeyPair(), generateKeyPair().publicKey, {
      address: '100.64.9.9',
      port: relay.udpPort,
    }).bind();
    const stranger = await new UdpPeer(generateKeyPair(), hubKey, {
      address: '100.64.9.10',
      port: relay.udpPort,
    }).bind();
    closers.push(
      () => wrongHub.close(),
      () => stranger.close(),
    );
    wrongHub.ping(1);
    stranger.ping(1);
    await dropsReach('mac1', udpCounter(m0, 'datagrams_dropped_total', 'mac1'), 1);
    await dropsReach('unknown-peer', udpCounter(m0, 'datagrams_dropped_total', 'unknown-peer'), 1);
    expect(wrongHub.received).toEqual([]);
    expect(stranger.received).toEqual([]);
  });

  it('replayed and forged transport packets, also from a spoofed source, are dropped and never move the path', async () => {
    const m0 = await metrics(relay);
    const captured = legit.transportData;
    expect(captured.length).toBeGreaterThanOrEqual(3);
    const spoofer = await rawSocket();
    closers.push(() => spoofer.socket.close());
    const rounds = 5 * scale;
    for (let i = 0; i < rounds; i++) {
      for (const d of captured) {
        legit.socket.send(d, relay.udpPort, HOST); // replay from the peer's own address
        spoofer.send(d, relay.udpPort); // the same from elsewhere
      }
      await breathe(i);
    }
    const replays = rounds * captured.length * 2;
    expect(await dropsReach('replay', udpCounter(m0, 'datagrams_dropped_total', 'replay'), replays)).toBe(
      replays,
    );
    // A forged body under the peer's receiver index and a fresh counter: fails to open.
    const forged = Buffer.from(captured[0]!);
    forged.writeUInt32LE(0x7fff_0000, 8);
    forged[forged.length - 1]! ^= 0xff;
    for (let i = 0; i < rounds; i++) {
      spoofer.send(forged, relay.udpPort);
      await breathe(i);
    }
    expect(await dropsReach('decrypt', udpCounter(m0, 'datagrams_dropped_total', 'decrypt'), rounds)).toBe(
      rounds,
    );

    const m1 = await metrics(relay);
    expect(udpCounter(m1, 'roams_total')).toBe(udpCounter(m0, 'roams_total'));
    expect(udpCounter(m1, 'paths_opened_total')).toBe(1);
    expect(spoofer.got).toEqual([]);
    // The hub still answers the peer at its own address.
    const before = legit.replies.length;
    legit.ping(100);
    await waitFor(() => legit.replies.includes(100), 5_000, 'the echo reply at the real address');
    expect(legit.replies.length).toBe(before + 1);
    expect(spoofer.got).toEqual([]);
  });
});
