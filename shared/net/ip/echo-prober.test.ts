import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { EchoProber, echoReplyFor, tryParseIpv4 } from './echo-prober.js';
import { buildIcmpEchoPacket, buildUdpPacket, ICMP_ECHO_REPLY, parseIpv4Packet } from './index.js';

const A = 0x64400002; // 100.64.0.2
const HUB = 0x64400001; // 100.64.0.1

describe('EchoProber', () => {
  it('measures the RTT from the echoed timestamp and smooths it', () => {
    const clock = new FakeClock();
    const p = new EchoProber({ clock, src: A, dst: HUB, identifier: 7 });
    const probe = p.probe();
    clock.advance(40);
    const reply = echoReplyFor(parseIpv4Packet(probe), HUB);
    expect(reply).not.toBeNull();
    expect(p.onPacket(parseIpv4Packet(reply!))).toBe(true);
    expect(p.rttMs).toBe(40);
    expect(p.lastReplyAt).toBe(clock.now());
    const second = p.probe();
    clock.advance(120);
    p.onPacket(parseIpv4Packet(echoReplyFor(parseIpv4Packet(second), HUB)!));
    expect(p.rttMs).toBe(40 + 0.125 * 80);
    expect(p.received).toBe(2);
    expect(p.sent).toBe(2);
  });

  it('ignores replies that are not its own: other identifier, other peer, other payload', () => {
    const clock = new FakeClock();
    const p = new EchoProber({ clock, src: A, dst: HUB, identifier: 7 });
    const data = Buffer.alloc(16);
    const cases = [
      buildIcmpEchoPacket({ src: HUB, dst: A, type: ICMP_ECHO_REPLY, identifier: 8, sequence: 1 }, data),
      buildIcmpEchoPacket(
        { src: 0x64400003, dst: A, type: ICMP_ECHO_REPLY, identifier: 7, sequence: 1 },
        data,
      ),
      buildIcmpEchoPacket({ src: HUB, dst: A, type: ICMP_ECHO_REPLY, identifier: 7, sequence: 1 }, data),
      buildUdpPacket({ src: HUB, dst: A, srcPort: 1, dstPort: 2 }, data),
    ];
    expect(cases.map((c) => p.onPacket(parseIpv4Packet(c)))).toEqual([false, false, false, false]);
    expect(p.rttMs).toBeNull();
    expect(p.lastReplyAt).toBeNull();
  });

  it('echoReplyFor answers only echo requests addressed to itself', () => {
    const clock = new FakeClock();
    const toHub = new EchoProber({ clock, src: A, dst: HUB }).probe();
    const toOther = new EchoProber({ clock, src: A, dst: 0x64400009 }).probe();
    const r = echoReplyFor(parseIpv4Packet(toHub), HUB);
    const v = parseIpv4Packet(r!);
    expect([v.src, v.dst]).toEqual([HUB, A]);
    expect(echoReplyFor(parseIpv4Packet(toOther), HUB)).toBeNull();
    expect(echoReplyFor(v, A)).toBeNull(); // a reply is not answered
  });

  it('never throws on arbitrary bytes (property)', () => {
    const clock = new FakeClock();
    const p = new EchoProber({ clock, src: A, dst: HUB, identifier: 7 });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, icmpHeader) => {
        const b = Buffer.from(bytes);
        if (icmpHeader && b.length >= 20) {
          b[0] = 0x45;
          b[9] = 1;
          b.writeUInt16BE(b.length, 2);
          b.writeUInt32BE(HUB, 12);
          b.writeUInt32BE(A, 16);
        }
        const ip = tryParseIpv4(b);
        if (ip) {
          p.onPacket(ip);
          echoReplyFor(ip, A);
        }
        const rtt = p.rttMs;
        return rtt === null || (rtt >= 0 && rtt <= 60_000);
      }),
      { numRuns: 2000 },
    );
  });
});
