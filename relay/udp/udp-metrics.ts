/** Prometheus families of the hub's UDP port (read at scrape time from its stats). */
import { byReason, counterFamily, type Family, oneSample } from '../metrics.js';
import type { HubUdpStats } from './hub-udp.js';

export function hubUdpFamilies(s: HubUdpStats, direct: { opened: number; roamed: number }): Family[] {
  const p = 'tunnel_relay_udp_';
  return [
    counterFamily(
      `${p}datagrams_received_total`,
      'UDP datagrams received on the WireGuard UDP port.',
      oneSample(s.received),
    ),
    counterFamily(
      `${p}datagrams_authenticated_total`,
      'Datagrams on the UDP port that authenticated (handshake messages and transport data of a peer).',
      oneSample(s.authenticated),
    ),
    counterFamily(
      `${p}datagrams_dropped_total`,
      'Datagrams on the UDP port dropped before they authenticated, by reason.',
      byReason(s.dropped),
    ),
    counterFamily(`${p}datagrams_sent_total`, 'Datagrams the hub sent from the UDP port.', oneSample(s.sent)),
    counterFamily(
      `${p}send_failures_total`,
      'Datagrams the UDP port could not send (send queue backed up, socket error).',
      oneSample(s.sendFailed),
    ),
    counterFamily(
      `${p}paths_opened_total`,
      "Peers' first authenticated datagram over UDP (a direct path opened).",
      oneSample(direct.opened),
    ),
    counterFamily(
      `${p}roams_total`,
      'Direct paths that moved to a new address after an authenticated datagram from it.',
      oneSample(direct.roamed),
    ),
  ];
}
