/**
 * Interop with the real wireguard-go (Debian build) in a network namespace: our Device runs on a UDP
 * socket on the host side of a veth; wireguard-go's TUN lives in the namespace, where the kernel
 * answers pings. Every case starts its own wireguard-go and Device and tears them down after.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, generatePresharedKey, type KeyPair } from '../shared/keys.js';
import { formatIpv4Address, parseIpv4Address } from '../shared/net/ip/address.js';
import {
  buildEchoReplyFor,
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from '../shared/net/ip/icmp.js';
import { IP_PROTO_ICMP, parseIpv4Packet } from '../shared/net/ip/ipv4.js';
import type { WireGuardTimers } from '../shared/net/wireguard/constants.js';
import type { Peer } from '../shared/net/wireguard/device.js';
import { cleanupAll } from './helpers/cleanup.js';
import { createNetns, type Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { UdpBind } from './helpers/udp-bind.js';
import { waitFor } from './helpers/wait.js';
import { startWireguardGo, type WireguardGoHandle } from './helpers/wireguard-go.js';

const WG_PORT = 51820;
const TUN_GO = '10.99.77.1'; // wireguard-go's tunnel address (inside the namespace)
const TUN_US = '10.99.77.2'; // ours
const SUBNET = `10.207.${(process.pid % 200) + 20}.0/24`;

let ns: Netns;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'wg', 'wireguard-go', 'ping']);
  ns = await createNetns('wgi', { subnet: SUBNET });
});

afterAll(async () => {
  await cleanupAll();
});

interface Setup {
  bind: UdpBind;
  peer: Peer;
  wg: WireguardGoHandle;
  keys: { ours: KeyPair; theirs: KeyPair };
  packets: Buffer[];
}

/** Everything a case opened, closed after it even when setup failed half way. */
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(o: {
  weInitiate: boolean;
  timers?: Partial<WireGuardTimers>;
  pskOurs?: Buffer;
  pskTheirs?: Buffer;
  echo?: boolean;
  underLoad?: () => boolean;
}): Promise<Setup> {
  const ours = generateKeyPair();
  const theirs = generateKeyPair();
  const packets: Buffer[] = [];
  let peerRef: Peer | undefined;
  const bind = await UdpBind.open({
    host: ns.hostAddress!,
    privateKey: ours.privateKey,
    timers: o.timers,
    underLoad: o.underLoad,
    onPacket: (p) => {
      const copy = Buffer.from(p);
      packets.push(copy);
      if (o.echo && peerRef) {
        const ip = parseIpv4Packet(copy);
        if (ip.protocol === IP_PROTO_ICMP && parseIcmpEcho(ip).type === ICMP_ECHO_REQUEST) {
          peerRef.send(buildEchoReplyFor(ip));
        }
      }
    },
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
        ...(o.pskTheirs ? { presharedKey: o.pskTheirs } : {}),
      },
    ],
  });
  closers.push(() => wg.stop());
  const peer = bind.device.addPeer({
    publicKey: theirs.publicKey,
    presharedKey: o.pskOurs,
    endpoint: o.weInitiate ? bind.to(ns.nsAddress!, WG_PORT) : undefined,
    allowedIps: [`${TUN_GO}/32`],
  });
  peerRef = peer;
  return { bind, peer, wg, keys: { ours, theirs }, packets };
}

function echoRequest(seq: number, id = 0x4242): Buffer {
  return buildIcmpEchoPacket(
    {
      src: parseIpv4Address(TUN_US),
      dst: parseIpv4Address(TUN_GO),
      type: ICMP_ECHO_REQUEST,
      identifier: id,
      sequence: seq,
    },
    Buffer.from(`ping ${seq} from the TypeScript peer`),
  );
}

function echoReplies(packets: Buffer[], id = 0x4242): number[] {
  const seqs: number[] = [];
  for (const p of packets) {
    const ip = parseIpv4Packet(p);
    if (ip.protocol !== IP_PROTO_ICMP || formatIpv4Address(ip.src) !== TUN_GO) continue;
    const e = parseIcmpEcho(ip);
    if (e.type === ICMP_ECHO_REPLY && e.identifier === id && e.checksumOk) seqs.push(e.sequence);
  }
  return seqs;
}

describe('interop with wireguard-go', () => {
  it('(a) we initiate, send an ICMP echo request, and decrypt the kernel reply', async () => {
    const s = await setup({ weInitiate: true });
    s.peer.send(echoRequest(1));
    await waitFor(() => echoReplies(s.packets).includes(1), 10_000, 'echo reply through wireguard-go');
    expect(s.peer.isSessionUp).toBe(true);
    const dump = await s.wg.wgShow();
    expect(dump.peers[0]!.latestHandshake).toBeGreaterThan(0);
    expect(dump.peers[0]!.endpoint).toBe(`${ns.hostAddress}:${s.bind.port}`);
  });

  it('(b) wireguard-go initiates (ping from the namespace); we respond and echo back', async () => {
    const s = await setup({ weInitiate: false, echo: true });
    const r = await ns.exec('ping', ['-c', '3', '-i', '0.3', '-W', '3', TUN_US], { timeoutMs: 20_000 });
    expect(r.stdout).toMatch(/3 packets transmitted, 3 received/);
    expect(s.peer.keypairs.current?.isInitiator).toBe(false);
    expect(s.peer.endpoint?.key).toBe(`udp:${ns.nsAddress}:${WG_PORT}`);
    const dump = await s.wg.wgShow();
    expect(dump.peers[0]!.latestHandshake).toBeGreaterThan(0);
  });

  it('(c) rekey under traffic (shortened thresholds on our side) keeps a ping stream unbroken', async () => {
    const s = await setup({ weInitiate: true, timers: { rekeyAfterTime: 1500, rekeyTimeout: 1000 } });
    let handshakes = 0;
    s.peer.on('handshake', () => handshakes++);
    const N = 40;
    for (let seq = 1; seq <= N; seq++) {
      s.peer.send(echoRequest(seq));
      await new Promise((r) => setTimeout(r, 150));
    }
    await waitFor(() => new Set(echoReplies(s.packets)).size === N, 10_000, `${N} echo replies`);
    expect(handshakes).toBeGreaterThanOrEqual(3);
    expect(new Set(echoReplies(s.packets)).size).toBe(N);
    expect(s.peer.drops.decrypt + s.peer.drops.replay + s.peer.drops['expired-keypair']).toBe(0);
  });

  it('(d) a wrong preshared key fails to handshake', async () => {
    const s = await setup({
      weInitiate: true,
      pskOurs: generatePresharedKey(),
      pskTheirs: generatePresharedKey(),
    });
    s.peer.send(echoRequest(1));
    await waitFor(() => s.bind.device.stats.drops.handshake >= 1, 10_000, 'the response to be rejected');
    await new Promise((r) => setTimeout(r, 500));
    expect(s.peer.isSessionUp).toBe(false);
    expect(echoReplies(s.packets)).toEqual([]);
    const dump = await s.wg.wgShow();
    expect(dump.peers[0]!.latestHandshake).toBe(0);
  });

  it('(e) cookies: under load we answer its initiation with a cookie reply; its retry carries a valid mac2', async () => {
    const s = await setup({ weInitiate: false, echo: true, underLoad: () => true });
    const r = await ns.exec('ping', ['-c', '9', '-i', '1', '-W', '2', TUN_US], { timeoutMs: 30_000 });
    expect(s.bind.device.stats.drops['cookie-sent']).toBeGreaterThanOrEqual(1);
    const received = Number(/(\d+) received/.exec(r.stdout)?.[1] ?? 0);
    expect(received).toBeGreaterThanOrEqual(1);
    expect(s.peer.lastHandshakeAt).not.toBeNull();
    expect(s.wg.readLog()).toMatch(/[Cc]ookie/);
  });
});
