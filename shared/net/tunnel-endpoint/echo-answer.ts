/**
 * ICMP echo at a tunnel endpoint: an inner ICMP packet from a peer addressed to the endpoint is either the reply
 * to one of the endpoint's probes of that peer (taken by its liveness, peer-liveness.ts) or an echo request, which
 * the endpoint answers to that peer (the owner hears of it first: a hub tells an agent's runs apart by its probes).
 * Anything else (ICMP to another address, other ICMP types) is not taken: it goes to the owner's onPacket.
 */
import { echoReplyFor, tryParseIpv4 } from '../ip/echo-prober.js';
import type { Ipv4View } from '../ip/ipv4.js';
import type { PeerLiveness } from './peer-liveness.js';

/** What an echo did: a peer's request the endpoint answers, or a reply that answered one of our probes. */
export interface EchoEvent {
  readonly kind: 'request' | 'answered';
  readonly ip: Ipv4View;
}

export interface EchoContext {
  /** The endpoint's own address. */
  readonly self: number;
  /** The peer's liveness (its prober). */
  readonly liveness: PeerLiveness | undefined;
  /** Sends the reply to the peer. */
  reply(packet: Buffer): void;
  /** Told before a request is answered, and after a reply was taken. */
  onEcho?(event: EchoEvent): void;
}

/** Answers or takes an ICMP packet from a peer; false when it is not an echo to the endpoint (see above). */
export function answerEcho(packet: Buffer, c: EchoContext): boolean {
  const ip = tryParseIpv4(packet);
  if (!ip || ip.dst !== c.self) return false;
  const reply = echoReplyFor(ip, c.self);
  if (reply) {
    c.onEcho?.({ kind: 'request', ip });
    c.reply(reply);
    return true;
  }
  if (!c.liveness?.answer(ip)) return false;
  c.onEcho?.({ kind: 'answered', ip });
  return true;
}
