/**
 * shared/ip packets against the Linux IP stack: packets we build are written into a TUN device
 * inside a namespace (as wireguard-go does with decrypted inner packets), so the kernel itself
 * validates the IPv4 header and UDP checksums and answers our ICMP echo. A corrupted checksum
 * must be dropped, which shows the check is real. Python only opens the TUN (Node has no ioctl).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIpv4Address, parseIpv4Address } from '../shared/net/ip/address.js';
import {
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
} from '../shared/net/ip/icmp.js';
import { ipv4HeaderChecksumOk, parseIpv4Packet } from '../shared/net/ip/ipv4.js';
import { buildUdpPacket, parseUdp, udpChecksumOk } from '../shared/net/ip/udp.js';
import {
  cleanupAll,
  createNetns,
  type Netns,
  requireIntegrationPrivileges,
  uniqueIfname,
} from './helpers/index.js';

// Reads hex packets (one per line) from stdin, writes each to a fresh TUN with 10.203.40.1/24,
// listens on UDP 10.203.40.1:7777, and prints JSON: datagrams received and packets the kernel
// wrote back to the TUN (hex).
const TUN_SCRIPT = `
import fcntl, json, os, select, socket, struct, subprocess, sys, time
name = sys.argv[1]
fd = os.open('/dev/net/tun', os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack('16sH', name.encode(), 0x0001 | 0x1000))  # TUNSETIFF, IFF_TUN|IFF_NO_PI
subprocess.check_call(['ip', 'addr', 'add', '10.203.40.1/24', 'dev', name])
subprocess.check_call(['ip', 'link', 'set', name, 'up'])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(('10.203.40.1', 7777))
u.setblocking(False)
for line in sys.stdin.read().split():
    os.write(fd, bytes.fromhex(line))
got, back = [], []
end = time.time() + 1.0
while time.time() < end:
    r, _, _ = select.select([fd, u], [], [], 0.1)
    if u in r:
        d, a = u.recvfrom(65535)
        got.append({'data': d.decode('latin1'), 'from': a[0], 'port': a[1]})
    if fd in r:
        back.append(os.read(fd, 65535).hex())
print(json.dumps({'udp': got, 'tun': back}))
`;

describe('shared/ip packets accepted by the kernel through a TUN', () => {
  let ns: Netns;
  beforeAll(async () => {
    requireIntegrationPrivileges(['ip', 'python3']);
    ns = await createNetns('hst-k');
  });
  afterAll(cleanupAll);

  it('delivers our UDP datagrams, drops a bad checksum, and answers our ping with a valid reply', async () => {
    const peer = parseIpv4Address('10.203.40.2');
    const local = parseIpv4Address('10.203.40.1');
    const good = buildUdpPacket(
      { src: peer, dst: local, srcPort: 40000, dstPort: 7777 },
      Buffer.from('good datagram'),
    );
    const big = buildUdpPacket(
      { src: peer, dst: local, srcPort: 40001, dstPort: 7777 },
      Buffer.alloc(1392, 'x'),
    );
    const noSum = buildUdpPacket(
      { src: peer, dst: local, srcPort: 40004, dstPort: 7777, checksum: false },
      Buffer.from('no checksum'),
    );
    const bad = buildUdpPacket(
      { src: peer, dst: local, srcPort: 40002, dstPort: 7777 },
      Buffer.from('bad datagram'),
    );
    bad.writeUInt16BE(bad.readUInt16BE(26) ^ 0x0101, 26);
    const badHeader = buildUdpPacket(
      { src: peer, dst: local, srcPort: 40003, dstPort: 7777 },
      Buffer.from('bad header'),
    );
    badHeader.writeUInt16BE(badHeader.readUInt16BE(10) ^ 0x0101, 10);
    const ping = buildIcmpEchoPacket(
      { src: peer, dst: local, type: ICMP_ECHO_REQUEST, identifier: 0x4242, sequence: 7 },
      Buffer.from('ping payload'),
    );
    const input = [good, big, noSum, bad, badHeader, ping].map((p) => p.toString('hex')).join('\n');
    const { stdout } = await ns.exec('python3', ['-c', TUN_SCRIPT, uniqueIfname('tk')], {
      input,
      timeoutMs: 15_000,
    });
    const out = JSON.parse(stdout) as { udp: { data: string; from: string; port: number }[]; tun: string[] };

    expect(out.udp.map((d) => d.port).sort()).toEqual([40000, 40001, 40004]);
    expect(out.udp.find((d) => d.port === 40004)?.data).toBe('no checksum');
    expect(out.udp.find((d) => d.port === 40000)).toEqual({
      data: 'good datagram',
      from: '10.203.40.2',
      port: 40000,
    });
    expect(out.udp.find((d) => d.port === 40001)?.data).toBe('x'.repeat(1392));

    const replies = out.tun
      .filter((h) => h.startsWith('4')) // skip the kernel's IPv6 router solicitations
      .map((h) => parseIpv4Packet(Buffer.from(h, 'hex')))
      .filter((p) => p.protocol === 1)
      .map((p) => ({ p, e: parseIcmpEcho(p) }));
    expect(replies).toHaveLength(1);
    const { p, e } = replies[0]!;
    expect(formatIpv4Address(p.src)).toBe('10.203.40.1');
    expect(ipv4HeaderChecksumOk(p)).toBe(true);
    expect(e).toMatchObject({ type: ICMP_ECHO_REPLY, identifier: 0x4242, sequence: 7, checksumOk: true });
    expect(e.data.toString()).toBe('ping payload');
  });

  it('our UDP checksum verifier agrees with what the kernel sends', async () => {
    // A datagram sent by a socket towards the TUN side comes back out of the TUN with the
    // kernel's full checksum (TUN has no checksum offload here).
    const script = TUN_SCRIPT.replace(
      'for line in sys.stdin.read().split():',
      "u.sendto(b'from the kernel', ('10.203.40.9', 9999))\nfor line in sys.stdin.read().split():",
    );
    const { stdout } = await ns.exec('python3', ['-c', script, uniqueIfname('tk')], {
      input: '',
      timeoutMs: 15_000,
    });
    const out = JSON.parse(stdout) as { tun: string[] };
    const udp = out.tun
      .filter((h) => h.startsWith('4')) // skip the kernel's IPv6 router solicitations
      .map((h) => parseIpv4Packet(Buffer.from(h, 'hex')))
      .filter((p) => p.protocol === 17);
    expect(udp).toHaveLength(1);
    const u = parseUdp(udp[0]!);
    expect(u.payload.toString()).toBe('from the kernel');
    expect(u.checksum).not.toBe(0);
    expect(udpChecksumOk(udp[0]!, u)).toBe(true);
    expect(ipv4HeaderChecksumOk(udp[0]!)).toBe(true);
  });
});
