/**
 * /metrics families of the hub's stream binding and proxies, read at scrape time: stream links (one
 * per agent session), streams, the ARQ and mux counters summed over every link the binding had
 * (shared/net/tunnel-streams/link-totals.ts: they never decrease when a link closes), the binding's
 * drops, and the CONNECT / path proxy results. Labels are fixed names and HTTP statuses only.
 */
import type { StreamBinding } from '../../../shared/net/tunnel-streams/stream-binding.js';
import type { LivePipes } from '../../control/api/live-pipes.js';
import {
  byReason,
  counterFamily as counter,
  type Family,
  gaugeFamily as gauge,
  type Labels,
  oneSample as one,
} from '../../ops/metrics.js';
import type { ConnectProxyStats } from './connect-proxy.js';
import type { PathProxyStats } from './path-proxy.js';

export function streamFamilies(b: StreamBinding): Family[] {
  const t = b.linkTotals();
  const p = 'tunnel_relay_streams_';
  return [
    gauge(`${p}links`, 'Stream links (agent sessions) open at the hub.', b.linkCount),
    gauge(`${p}open`, 'Streams open over all links.', b.streamCount),
    counter(`${p}links_started_total`, 'Stream links started by the hub.', one(b.stats.linksStarted)),
    counter(`${p}opened_total`, 'Streams opened by the hub (proxy requests).', one(t.mux.streamsOpened)),
    // Agents may not open streams: the hub resets every one at once, so no other refusal reason can occur here.
    counter(`${p}refused_total`, 'Streams an agent opened, reset at once by the hub, by reason.', [
      [{ reason: 'protocol_violation' }, t.mux.refused.protocolViolation],
    ]),
    counter(`${p}arq_retransmits_total`, 'ARQ segments retransmitted, by trigger.', [
      [{ trigger: 'timeout' }, t.arq.retransmitsTimeout],
      [{ trigger: 'fast' }, t.arq.retransmitsFast],
    ]),
    counter(`${p}arq_datagrams_sent_total`, 'ARQ datagrams sent.', one(t.arq.datagramsOut)),
    counter(`${p}arq_datagrams_received_total`, 'ARQ datagrams received.', one(t.arq.datagramsIn)),
    counter(`${p}arq_bytes_sent_total`, 'ARQ datagram bytes sent.', one(t.arq.bytesOut)),
    counter(`${p}arq_bytes_received_total`, 'ARQ datagram bytes received.', one(t.arq.bytesIn)),
    counter(
      `${p}arq_garbage_total`,
      'ARQ datagrams or segments discarded as garbage, by reason.',
      byReason(t.arq.garbage),
    ),
    counter(
      `${p}arq_dropped_total`,
      'Valid ARQ segments dropped by the receiver, by reason.',
      byReason(t.arq.dropped),
    ),
    counter(`${p}send_errors_total`, 'Inner packets the hub could not hand to WireGuard.', one(t.sendErrors)),
    counter(
      `${p}datagrams_received_total`,
      'Stream datagrams (inner UDP) received by the hub.',
      one(b.stats.datagramsIn),
    ),
    counter(
      `${p}datagrams_dropped_total`,
      'Inner packets dropped by the stream binding, by reason.',
      byReason(b.stats.dropped),
    ),
  ];
}

export function proxyFamilies(connect: ConnectProxyStats, path: PathProxyStats): Family[] {
  const samples: Array<[Labels, number]> = [
    [{ proxy: 'connect', result: 'established', status: '200' }, connect.established],
  ];
  for (const [status, n] of Object.entries(connect.failed))
    samples.push([{ proxy: 'connect', result: 'refused', status }, n]);
  for (const [status, n] of Object.entries(path.forwarded))
    samples.push([{ proxy: 'path', result: 'forwarded', status }, n]);
  for (const [status, n] of Object.entries(path.failed))
    samples.push([{ proxy: 'path', result: status === 'aborted' ? 'aborted' : 'refused', status }, n]);
  samples.push([{ proxy: 'upgrade', result: 'spliced', status: 'none' }, path.upgrades]);
  for (const [status, n] of Object.entries(path.upgradeFailed))
    samples.push([{ proxy: 'upgrade', result: 'refused', status }, n]);
  return [
    counter(
      'tunnel_relay_proxy_requests_total',
      'Hub proxy requests by proxy (connect, path, upgrade), result and HTTP status (class for forwarded answers).',
      samples,
    ),
  ];
}

/** The live-pipe registry: pipes open, pipes ended by their key's end, pipes refused at the cap. */
export function pipeFamilies(pipes: LivePipes): Family[] {
  const p = 'tunnel_relay_proxy_';
  return [
    gauge(`${p}live_connections`, 'Hub proxy connections open (tunnels, upgrades, requests).', pipes.size),
    counter(
      `${p}connections_ended_total`,
      'Hub proxy connections ended because their access key ended, by reason.',
      [
        [{ reason: 'revoked' }, pipes.stats.ended.revoked],
        [{ reason: 'expired' }, pipes.stats.ended.expired],
      ],
    ),
    counter(
      `${p}connections_refused_full_total`,
      'Hub proxy connections refused because the live-connection cap was reached.',
      one(pipes.stats.refusedFull),
    ),
  ];
}
