/** Prometheus families of the hub's UDP port (read at scrape time from its stats). */

import type { DiscoPeers } from '../../../shared/net/tunnel-endpoint/disco-peers.js';
import { byReason, counterFamily, type Family, type Labels, oneSample } from '../../ops/metrics.js';
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
      `${p}runs_sent_total`,
      'sendmsg calls that sent a run of datagrams with UDP GSO (0 where the port runs on node:dgram).',
      oneSample(s.runsSent),
    ),
    counterFamily(
      `${p}runs_received_total`,
      'Reads that returned a run of more than one datagram (UDP GRO; 0 where the port runs on node:dgram).',
      oneSample(s.runsReceived),
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

/** Prometheus families of the hub's disco (probes with the agents, over the relay and the UDP port). */
export function discoFamilies(
  d: Pick<DiscoPeers, 'stats' | 'dropped' | 'routes' | 'pingOutcomes' | 'candidatesRefused'>,
): Family[] {
  const p = 'tunnel_relay_disco_';
  return [
    counterFamily(
      `${p}messages_received_total`,
      'Disco messages received (relay and UDP).',
      oneSample(d.stats.received),
    ),
    counterFamily(`${p}messages_sent_total`, 'Disco messages sent (relay and UDP).', oneSample(d.stats.sent)),
    counterFamily(
      `${p}dropped_total`,
      'Disco messages dropped, by reason (docs/PROTOCOL.md section 9).',
      byReason(d.dropped),
    ),
    counterFamily(
      `${p}candidates_refused_total`,
      "Agents' candidate addresses the hub never pings, by reason (the address's scope, own-address, churn).",
      byReason(d.candidatesRefused),
    ),
    {
      name: `${p}peers`,
      help: "Agents by their path selector's route (relayed, both, direct).",
      type: 'gauge',
      samples: Object.entries(d.routes()).map(([route, v]) => [{ route }, v]),
    },
    counterFamily(`${p}path_switches_total`, "Agents' route changes to direct and away from it.", [
      [{ direction: 'to_direct' }, d.stats.toDirect],
      [{ direction: 'from_direct' }, d.stats.fromDirect],
    ]),
    counterFamily(
      `${p}pings_total`,
      "The hub's connectivity probes (disco pings) to agents, by carrier (relay, udp) and outcome (sent, answered, lost).",
      (['relay', 'udp'] as const).flatMap((via) =>
        (['sent', 'answered', 'lost'] as const).map((outcome): [Labels, number] => [
          { via, outcome },
          d.pingOutcomes[via][outcome],
        ]),
      ),
    ),
  ];
}
