/**
 * ICMP echo inside the tunnel: the hub node answers pings to its address, and each side probes the
 * other to measure RTT and notice a dead path. Shared by the hub node and the agent session (it is a
 * codec plus a little state; a candidate for shared/ip when someone owns it).
 *
 * Probe payload (ICMP echo data, 16 bytes):
 *   0        8                16
 *   | magic  | sentAt (f64 BE) |   magic = "tnlprobe"; sentAt = the sender's monotonic clock, ms
 * The reply echoes it, so the RTT needs no per-probe state. Replies are only trusted because they
 * arrived inside an authenticated WireGuard session from the peer's allowed address.
 */
import type { Clock } from '../../clock.js';
import { isTunnelError } from '../../errors.js';
import {
  buildEchoReplyFor,
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  IP_PROTO_ICMP,
  type Ipv4View,
  parseIcmpEcho,
  parseIpv4Packet,
} from './index.js';

const MAGIC = Buffer.from('tnlprobe', 'latin1');
const PROBE_DATA_LEN = 16;
/** Replies claiming an RTT beyond this are ignored (stale or forged timestamps). */
const MAX_RTT_MS = 60_000;
/** Weight of a new sample in the smoothed RTT (TCP's 1/8). */
const SRTT_ALPHA = 0.125;

/** Cheap pre-check on the packet path: an IPv4 packet carrying ICMP (anything else skips parsing). */
export function isIcmpv4(packet: Buffer): boolean {
  return packet.length >= 20 && packet[0]! >> 4 === 4 && packet[9] === IP_PROTO_ICMP;
}

/** A parsed inner IPv4 packet, or null when it is not IPv4 (IPv6, garbage). */
export function tryParseIpv4(packet: Buffer): Ipv4View | null {
  if (packet.length < 20 || packet[0]! >> 4 !== 4) return null;
  try {
    return parseIpv4Packet(packet);
  } catch (err) {
    if (isTunnelError(err)) return null;
    throw err;
  }
}

/** The echo reply for `ip` when it is an ICMP echo request addressed to `self`, else null. */
export function echoReplyFor(ip: Ipv4View, self: number): Buffer | null {
  if (ip.protocol !== IP_PROTO_ICMP || ip.dst !== self) return null;
  try {
    const e = parseIcmpEcho(ip);
    if (e.type !== ICMP_ECHO_REQUEST || !e.checksumOk) return null;
    return buildEchoReplyFor(ip);
  } catch (err) {
    if (isTunnelError(err)) return null;
    throw err;
  }
}

export class EchoProber {
  /** Smoothed RTT in ms (null before the first reply). */
  rttMs: number | null = null;
  /** Monotonic ms of the last matching reply. */
  lastReplyAt: number | null = null;
  /** When the probe the last matching reply answers was sent (monotonic ms): a reply to a probe sent after T proves life after T. */
  lastAnsweredProbeAt: number | null = null;
  sent = 0;
  received = 0;
  readonly #clock: Clock;
  readonly #src: number;
  readonly #dst: number;
  readonly #identifier: number;
  #seq = 0;

  constructor(opts: { clock: Clock; src: number; dst: number; identifier?: number }) {
    this.#clock = opts.clock;
    this.#src = opts.src;
    this.#dst = opts.dst;
    this.#identifier = opts.identifier ?? Math.floor(Math.random() * 0x10000);
  }

  /** A new echo request packet (IPv4) from src to dst. */
  probe(): Buffer {
    const data = Buffer.allocUnsafe(PROBE_DATA_LEN);
    MAGIC.copy(data, 0);
    data.writeDoubleBE(this.#clock.now(), 8);
    this.#seq = (this.#seq + 1) & 0xffff;
    this.sent++;
    return buildIcmpEchoPacket(
      {
        src: this.#src,
        dst: this.#dst,
        type: ICMP_ECHO_REQUEST,
        identifier: this.#identifier,
        sequence: this.#seq,
      },
      data,
    );
  }

  /** Consumes `ip` if it is the reply to one of our probes; returns whether it was. */
  onPacket(ip: Ipv4View): boolean {
    if (ip.protocol !== IP_PROTO_ICMP || ip.src !== this.#dst || ip.dst !== this.#src) return false;
    let sentAt: number;
    try {
      const e = parseIcmpEcho(ip);
      if (e.type !== ICMP_ECHO_REPLY || e.identifier !== this.#identifier) return false;
      if (e.data.length !== PROBE_DATA_LEN || !e.data.subarray(0, 8).equals(MAGIC)) return false;
      sentAt = e.data.readDoubleBE(8);
    } catch (err) {
      if (isTunnelError(err)) return false;
      throw err;
    }
    const now = this.#clock.now();
    const rtt = now - sentAt;
    if (!(rtt >= 0 && rtt <= MAX_RTT_MS)) return true;
    this.received++;
    this.lastReplyAt = now;
    this.lastAnsweredProbeAt = sentAt;
    const prev = this.rttMs;
    this.rttMs = prev === null ? rtt : prev + SRTT_ALPHA * (rtt - prev);
    return true;
  }

  /** The smoothed RTT rounded to 0.01 ms, for status output. */
  get roundedRttMs(): number | null {
    return this.rttMs === null ? null : Math.round(this.rttMs * 100) / 100;
  }
}
