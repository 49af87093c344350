/**
 * Abuse replay: agent B's relay connection carries agent A's WireGuard datagrams. The relay authenticates each
 * connection's key, and the hub must hold every datagram it takes from a connection to that key: a datagram that
 * authenticates as A but comes from B's connection would otherwise move A's endpoint to B's connection, and the
 * hub would send A's traffic to B (A's requests time out while it lasts). Through the real relay process, with
 * two agents admitted through its API: A is a WireGuard peer built from the project's own library
 * (shared/wireguard) on its own relay connection; every datagram it sends goes to the hub over B's connection
 * first and over its own 20 ms later (B wins every race). A's echo requests to the hub are all answered, at A;
 * B receives no WireGuard datagram from the hub; each copy B carried is dropped and counted
 * (tunnel_relay_hub_dropped_total{stage="device",reason="sender-mismatch"}).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDerp, type DerpClient } from '../../shared/net/derp/client.js';
import { isDiscoMessage } from '../../shared/net/disco/disco-codec.js';
import {
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from '../../shared/net/ip/icmp.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import { parseIpv4Packet } from '../../shared/net/ip/ipv4.js';
import { Device } from '../../shared/net/wireguard/device.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { waitFor } from '../helpers/wait.js';
import { metrics } from '../hub-udp-fixture.js';
import { type RegisteredAgent, registerAgent } from './hub-peers.js';
import { type ServedRelay, serve } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const scale = abuseScale();
/** How much later A's own copy of each datagram leaves, after B's. */
const OWN_COPY_DELAY_MS = 20;

let relay: ServedRelay;
let a: RegisteredAgent;
let b: RegisteredAgent;
const closers: Array<() => void> = [];

function relayClient(agent: RegisteredAgent, onPacket: (src: Buffer, payload: Buffer) => void): DerpClient {
  const client = connectDerp({
    url: agent.tunnel.derpUrl,
    caPin: relay.ready.caPin,
    keyPair: agent.keys,
    onPacket,
  });
  closers.push(() => client.close());
  return client;
}

const mismatches = (m: Map<string, number>) =>
  [...m].find(
    ([k]) => k.startsWith('tunnel_relay_hub_dropped_total') && k.includes('"sender-mismatch"'),
  )?.[1] ?? 0;

beforeAll(async () => {
  buildIfStale();
  relay = await serve(join(tempDir('abuse-sender-key-'), 'relay'));
  a = await registerAgent(relay, 'sender-key-a');
  b = await registerAgent(relay, 'sender-key-b');
}, 60_000);

afterAll(async () => {
  for (const c of closers.splice(0)) c();
  await relay?.proc.stop();
  await cleanup();
});

describe("abuse: another agent's relay connection carries an agent's datagrams", () => {
  it("does not divert the agent's traffic; every copy is dropped and counted", async () => {
    const hubKey = Buffer.from(a.tunnel.hubPublicKey, 'base64');
    const replies: number[] = [];
    let carriedByB = 0;
    const toB: Buffer[] = [];
    const HUB = {
      key: 'relay:hub',
      send: (d: Buffer) => {
        carriedByB++;
        viaB.send(hubKey, Buffer.from(d));
        const own = Buffer.from(d);
        setTimeout(() => viaA.send(hubKey, own), OWN_COPY_DELAY_MS);
        return true;
      },
    };
    const device: Device<typeof HUB> = new Device<typeof HUB>({
      privateKey: a.keys.privateKey,
      onPacket: (p) => {
        const e = parseIcmpEcho(parseIpv4Packet(Buffer.from(p)));
        if (e.type === ICMP_ECHO_REPLY) replies.push(e.sequence);
      },
    });
    closers.push(() => device.close());
    device.addPeer({
      publicKey: hubKey,
      presharedKey: a.tunnel.presharedKey,
      endpoint: HUB,
      allowedIps: [`${a.tunnel.hubAddress}/32`],
    });
    const viaA = relayClient(a, (src, payload) => {
      if (src.equals(hubKey) && !isDiscoMessage(payload)) device.receive(Buffer.from(payload), HUB);
    });
    const viaB = relayClient(b, (src, payload) => {
      if (src.equals(hubKey) && !isDiscoMessage(payload)) toB.push(Buffer.from(payload));
    });
    await Promise.all([viaA.whenConnected(10_000), viaB.whenConnected(10_000)]);
    const m0 = await metrics(relay);
    const src = parseIpv4Address(a.tunnel.address.replace(/\/32$/, ''));
    const dst = parseIpv4Address(a.tunnel.hubAddress);
    const n = 10 * scale;
    for (let seq = 1; seq <= n; seq++) {
      device.send(
        buildIcmpEchoPacket(
          { src, dst, type: ICMP_ECHO_REQUEST, identifier: 9, sequence: seq },
          Buffer.from('a'),
        ),
      );
      await waitFor(() => replies.includes(seq), 10_000, `the hub's answer to echo ${seq}, at A`);
    }
    expect(replies).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(toB).toEqual([]);
    // The handshake and every request went through B first: each of those copies is dropped and counted.
    expect(carriedByB).toBeGreaterThan(n);
    await waitFor(
      async () => mismatches(await metrics(relay)) - mismatches(m0) >= carriedByB,
      10_000,
      `${carriedByB} datagrams counted as sender-mismatch`,
    );
    expect(mismatches(await metrics(relay)) - mismatches(m0)).toBe(carriedByB);
  });
});
