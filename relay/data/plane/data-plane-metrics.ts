/**
 * /metrics families of the data plane, read at scrape time from the stats objects the DERP server,
 * the hub node and the WireGuard device already keep (nothing is added to the packet path).
 * Labels are fixed reason/stage names only: no keys, addresses or cluster names.
 */

import {
  byReason,
  counterFamily as counter,
  type Family,
  gaugeFamily as gauge,
  type Labels,
  oneSample as one,
  RunningTotals,
} from '../../ops/metrics.js';
import type { DerpStats } from '../derp/peer.js';
import type { HubNode } from '../hub/hub-node.js';

type Peer = HubNode['device']['peers'][number];

/** The DERP server's counters (relay/data/derp/peer.ts DerpStats). */
export function derpFamilies(s: Readonly<DerpStats>): Family[] {
  const p = 'tunnel_relay_derp_';
  return [
    gauge(`${p}clients`, 'Clients registered now (WebSocket and in-process).', s.clients),
    gauge(`${p}handshaking`, 'WebSocket connections in the DERP handshake now.', s.handshaking),
    counter(`${p}accepts_total`, 'WebSocket upgrades accepted on /derp.', one(s.accepts)),
    counter(`${p}refused_total`, 'Connections refused, by reason.', [
      [{ reason: 'full' }, s.refusedFull],
      [{ reason: 'source_limit' }, s.refusedSourceLimit],
      [{ reason: 'evicted' }, s.handshakeEvictions],
      [{ reason: 'not_admitted' }, s.refusedNotAdmitted],
      [{ reason: 'auth_failed' }, s.authFailures],
      [{ reason: 'handshake_timeout' }, s.handshakeTimeouts],
    ]),
    counter(
      `${p}protocol_errors_total`,
      'Connections closed for breaking the frame protocol.',
      one(s.protocolErrors),
    ),
    counter(`${p}ping_timeouts_total`, 'Connections terminated by the liveness sweep.', one(s.pingTimeouts)),
    counter(
      `${p}write_timeouts_total`,
      'Connections terminated because writes made no progress.',
      one(s.writeTimeouts),
    ),
    counter(
      `${p}replaced_total`,
      'Connections closed because a newer one registered the same key.',
      one(s.replaced),
    ),
    counter(`${p}packets_received_total`, 'Packets received from clients (SendPacket).', one(s.packetsIn)),
    counter(
      `${p}bytes_received_total`,
      'Bytes received from clients (whole WebSocket messages; payloads for in-process clients).',
      one(s.bytesIn),
    ),
    counter(`${p}packets_sent_total`, 'Packets handed to destination clients.', one(s.packetsOut)),
    counter(
      `${p}bytes_sent_total`,
      'Bytes sent to clients (frames for WebSocket clients; payloads for in-process clients).',
      one(s.bytesOut),
    ),
    counter(`${p}packets_dropped_total`, 'Packets dropped by the relay, by reason.', byReason(s.dropped)),
    counter(
      `${p}bytes_dropped_total`,
      'Payload bytes of dropped packets (all reasons).',
      one(s.droppedBytes),
    ),
  ];
}

const PEER_FIELDS = ['rxBytes', 'txBytes'] as const;

/**
 * The hub node's counters. Per-peer numbers (bytes, inner drops, handshakes) are kept as running
 * totals over the device's peers (RunningTotals): call `retire(publicKey)` before the hub removes an
 * agent so its last gains are kept.
 */
export class HubMetrics {
  readonly #hub: HubNode;
  readonly #watched = new WeakSet<Peer>();
  #handshakes = 0;
  #dropReasons: string[] | undefined;
  #peerTotals: RunningTotals<Peer> | undefined;

  constructor(hub: HubNode) {
    this.#hub = hub;
  }

  /**
   * Starts counting a peer's completed handshakes (a 'handshake' listener; a handshake completed before
   * the peer was watched counts once). Call right after the hub adds a peer; scrapes catch the rest.
   */
  watch(peer: Peer): void {
    if (this.#watched.has(peer)) return;
    this.#watched.add(peer);
    if (peer.lastHandshakeAt !== null) this.#handshakes++;
    peer.on('handshake', () => {
      this.#handshakes++;
    });
  }

  /** Keeps an agent's peer counters before the hub removes it. */
  retire(publicKey: string): void {
    const peer = this.#hub.agent(publicKey)?.peer;
    if (peer && this.#peerTotals) this.#peerTotals.retire(peer);
  }

  #totals(peer: Peer): RunningTotals<Peer> {
    if (!this.#peerTotals) {
      const reasons = Object.keys(peer.drops);
      this.#dropReasons = reasons;
      this.#peerTotals = new RunningTotals<Peer>([...PEER_FIELDS, ...reasons], (p) => [
        p.rxBytes,
        p.txBytes,
        ...reasons.map((r) => (p.drops as Record<string, number>)[r] ?? 0),
      ]);
    }
    return this.#peerTotals;
  }

  families(): Family[] {
    const hub = this.#hub;
    const peers = hub.device.peers;
    let up = 0;
    for (const peer of peers) {
      this.watch(peer);
      if (peer.isSessionUp) up++;
    }
    const first = peers[0];
    if (first) this.#totals(first);
    const t = this.#peerTotals?.sample(peers) ?? [];
    const s = hub.stats;
    const peerDrops: Array<[Labels, number]> = (this.#dropReasons ?? []).map((reason, i) => [
      { stage: 'peer', reason },
      t[PEER_FIELDS.length + i] ?? 0,
    ]);
    const p = 'tunnel_relay_hub_';
    return [
      gauge(`${p}peers`, 'Agents configured as WireGuard peers of the hub.', s.agents),
      gauge(`${p}sessions_up`, 'Hub peers with a usable WireGuard session now.', up),
      gauge(
        `${p}pending_lookups`,
        'Admitted keys whose first datagrams wait for a store lookup.',
        s.pendingLookups,
      ),
      gauge(
        `${p}handshake_queue`,
        'WireGuard handshake messages waiting for their turn at the hub (cap 4,096).',
        s.handshakeQueue,
      ),
      counter(`${p}handshakes_total`, 'WireGuard handshakes completed by the hub.', one(this.#handshakes)),
      counter(
        `${p}datagrams_received_total`,
        'WireGuard datagrams received by the hub device.',
        one(s.device.rxDatagrams),
      ),
      counter(
        `${p}datagrams_sent_total`,
        'WireGuard datagrams sent by the hub device.',
        one(s.device.txDatagrams),
      ),
      counter(
        `${p}bytes_received_total`,
        'Authenticated WireGuard transport bytes received from agents.',
        one(t[0] ?? 0),
      ),
      counter(`${p}bytes_sent_total`, 'WireGuard transport bytes sent to agents.', one(t[1] ?? 0)),
      {
        name: `${p}agents`,
        help: 'Agents by the path their session uses now (none: not connected).',
        type: 'gauge',
        samples: Object.entries(hub.pathCounts()).map(([path, v]) => [{ path }, v]),
      },
      counter(
        `${p}path_bytes_total`,
        'WireGuard datagram bytes the hub sent to and received from agents (authenticated), by path.',
        (['direct', 'relayed'] as const).flatMap((path) => [
          [{ path, direction: 'in' }, hub.endpoint.paths.bytes[path].in],
          [{ path, direction: 'out' }, hub.endpoint.paths.bytes[path].out],
        ]),
      ),
      counter(`${p}dropped_total`, 'Datagrams and inner packets dropped by the hub, by stage and reason.', [
        ...byReason(s.device.drops, { stage: 'device' }),
        ...peerDrops,
        [{ stage: 'hub', reason: 'lookup_full' }, s.dropped.lookupFull],
        [{ stage: 'hub', reason: 'not_admitted' }, s.dropped.notAdmitted],
        [{ stage: 'hub', reason: 'pending_overflow' }, s.dropped.pendingOverflow],
        [{ stage: 'hub', reason: 'handshake_queue_full' }, s.dropped.handshakeQueueFull],
        [{ stage: 'hub', reason: 'handshake_stale' }, s.dropped.handshakeStale],
      ]),
    ];
  }
}
