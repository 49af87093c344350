/**
 * Interop of the in-place send path with the real wireguard-go: inner packets handed to our Device in
 * buffers granted room (shared/net/buffers/packet-room.ts) are sealed where they lie (header in front, padding and tag
 * behind). wireguard-go in a network namespace must decrypt them and its kernel must answer, for sizes
 * that need every amount of padding, and the datagrams must be the in-place ones (one allocation each).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../shared/keys.js';
import { allocPacket } from '../shared/net/buffers/packet-room.js';
import { formatIpv4Address, parseIpv4Address } from '../shared/net/ip/address.js';
import {
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from '../shared/net/ip/icmp.js';
import { IP_PROTO_ICMP, parseIpv4Packet } from '../shared/net/ip/ipv4.js';
import { TRANSPORT_HEADROOM, TRANSPORT_TAILROOM } from '../shared/net/wireguard/transport.js';
import { cleanupAll } from './helpers/cleanup.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { UdpBind } from './helpers/udp-bind.js';
import { waitFor } from './helpers/wait.js';
import { startWireguardGo } from './helpers/wireguard-go.js';

const WG_PORT = 51820;
const TUN_GO = '10.99.78.1';
const TUN_US = '10.99.78.2';
const SUBNET = `10.208.${(process.pid % 200) + 20}.0/24`;

let ns: Netns;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'wg', 'wireguard-go', 'ping']);
  ns = await createNetns('wgh', { subnet: SUBNET });
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

afterAll(async () => {
  await cleanupAll();
});

describe('in-place sealing against wireguard-go', () => {
  it('echo requests sealed in their own buffers (every padding length) are answered by the kernel', async () => {
    const ours = generateKeyPair();
    const theirs = generateKeyPair();
    const packets: Buffer[] = [];
    const sent: Buffer[] = [];
    const bind = await UdpBind.open({
      host: ns.hostAddress!,
      privateKey: ours.privateKey,
      onPacket: (p) => packets.push(Buffer.from(p)),
    });
    closers.push(() => bind.close());
    const wg = await startWireguardGo(ns, {
      privateKey: theirs.privateKey,
      listenPort: WG_PORT,
      address: `${TUN_GO}/24`,
      peers: [
        {
          publicKey: ours.publicKey,
          endpoint: `${ns.hostAddress}:${bind.port}`,
          allowedIps: [`${TUN_US}/32`],
        },
      ],
    });
    closers.push(() => wg.stop());
    const peer = bind.device.addPeer({
      publicKey: theirs.publicKey,
      endpoint: bind.to(ns.nsAddress!, WG_PORT),
      allowedIps: [`${TUN_GO}/32`],
    });
    const echo = (seq: number, size: number): Buffer =>
      buildIcmpEchoPacket(
        {
          src: parseIpv4Address(TUN_US),
          dst: parseIpv4Address(TUN_GO),
          type: ICMP_ECHO_REQUEST,
          identifier: 0x4848,
          sequence: seq,
        },
        Buffer.alloc(size, seq),
      );
    // A first plain packet starts the handshake (a packet staged before the session is up is copied).
    peer.send(echo(0, 8));
    await waitFor(() => peer.isSessionUp, 10_000, 'handshake with wireguard-go');
    // Inner lengths 28 + 8 + size: sizes 0..15 and a few large ones cover all 16 padding amounts and the MTU.
    const sizes = [...Array.from({ length: 16 }, (_, i) => i), 1000, 1001, 1383, 1384, 1392 - 8];
    for (const [i, size] of sizes.entries()) {
      const plain = echo(i + 1, size);
      const p = allocPacket(plain.length, TRANSPORT_HEADROOM, TRANSPORT_TAILROOM);
      plain.copy(p);
      sent.push(p);
      peer.send(p);
    }
    const replies = (): number[] =>
      packets.flatMap((p) => {
        const ip = parseIpv4Packet(p);
        if (ip.protocol !== IP_PROTO_ICMP || formatIpv4Address(ip.src) !== TUN_GO) return [];
        const e = parseIcmpEcho(ip);
        return e.type === ICMP_ECHO_REPLY && e.identifier === 0x4848 && e.checksumOk ? [e.sequence] : [];
      });
    await waitFor(() => sizes.every((_, i) => replies().includes(i + 1)), 10_000, 'every echo reply');
    // Sealed in place: each granted packet now holds ciphertext, not the echo request it carried.
    for (const [i, p] of sent.entries()) expect(p.equals(echo(i + 1, sizes[i]!))).toBe(false);
    expect(peer.drops['send-failed'] + peer.drops['bad-size']).toBe(0);
  });
});
