/**
 * A tunnel endpoint's UDP edge: what each datagram of one UDP transport (udp-transport.ts) is and who takes it.
 * - a STUN Binding success goes to `stun` (the transport's candidate gatherer: endpoint-candidates.ts, on
 *   shared/net/disco/candidates.ts) when the owner asks STUN servers through this socket; one that answers none
 *   of its requests is `stun-unexpected`;
 * - a disco message goes to the endpoint's disco, as from `udp` at the datagram's source;
 * - anything else goes to the endpoint's WireGuard device (`receiveFrom`), which says why it was dropped or
 *   null once it authenticated.
 * The hub's UDP port (relay/data/udp/hub-udp.ts) and the agent's direct socket
 * (tunnel-client/session/agent-direct.ts) both listen through `TunnelEndpoint.listenUdp`, so a second UDP
 * transport is one more call.
 */
import type { Received } from '../buffers/received.js';
import { isStunBindingSuccess } from '../stun/stun-codec.js';
import type { DatagramSource, ReceiveDrop } from '../wireguard/device.js';
import type { DiscoSource } from './disco-peers.js';
import type { UdpReceiver, UdpTransport } from './udp-transport.js';

/** The endpoint's side of the edge (TunnelEndpoint). */
export interface UdpEdgeEndpoint {
  receiveFrom(datagram: Received, from: DatagramSource, via?: Pick<UdpTransport, 'send'>): ReceiveDrop | null;
  receiveDisco(datagram: Buffer, from: DiscoSource, via?: Pick<UdpTransport, 'send'>): void;
}

/** What became of a datagram that was not disco: a WireGuard drop, null (authenticated), or a STUN verdict. */
export type UdpEdgeOutcome = ReceiveDrop | null | 'stun' | 'stun-unexpected';

export interface UdpEdgeOptions {
  /** A STUN Binding success: true when it answered one of our requests. Absent: such datagrams go to WireGuard. */
  stun?(datagram: Buffer, from: DatagramSource): boolean;
  /** Told the outcome of every datagram that was not disco (the owner's counters). */
  onOutcome?(outcome: UdpEdgeOutcome): void;
  /** The transport the datagrams come through (WireGuard's and disco's answers and the direct path go back through it). */
  via?: Pick<UdpTransport, 'send'>;
}

/** The receiver a transport listens with: datagrams told apart and handed to `endpoint` and `o.stun`. */
export function udpEdgeReceiver(endpoint: UdpEdgeEndpoint, o: UdpEdgeOptions = {}): UdpReceiver {
  const stun = o.stun;
  return {
    onWireGuard: (datagram, from) => {
      if (stun && isStunBindingSuccess(datagram)) {
        // Answered first: an optional call (`?.`) would skip its argument, the gatherer's answer, with no listener.
        const answered = stun(datagram, from);
        o.onOutcome?.(answered ? 'stun' : 'stun-unexpected');
        return;
      }
      const drop = endpoint.receiveFrom(datagram, from, o.via);
      o.onOutcome?.(drop);
    },
    onDisco: (message, from) =>
      endpoint.receiveDisco(message, { via: 'udp', address: from.address, port: from.port }, o.via),
  };
}
