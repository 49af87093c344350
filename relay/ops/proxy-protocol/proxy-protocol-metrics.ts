/** /metrics families of the PROXY protocol gate (`serve --proxy-protocol`). */
import { byReason, counterFamily, type Family, gaugeFamily } from '../metrics.js';
import type { ProxyProtocolGate } from './proxy-protocol-gate.js';

export function proxyProtocolFamilies(gate: ProxyProtocolGate): Family[] {
  const { accepted, refused } = gate.stats;
  return [
    counterFamily(
      'tunnel_relay_proxy_protocol_headers_total',
      'PROXY headers read from trusted peers, by version.',
      [
        [{ version: '1' }, accepted.v1],
        [{ version: '2' }, accepted.v2],
      ],
    ),
    counterFamily(
      'tunnel_relay_proxy_protocol_refused_total',
      'Connections from --proxy-protocol peers closed for their header, by reason (missing, malformed, too_long, timeout).',
      byReason(refused),
    ),
    gaugeFamily(
      'tunnel_relay_proxy_protocol_reading',
      'Connections from --proxy-protocol peers whose PROXY header is still being read.',
      gate.reading,
    ),
  ];
}
