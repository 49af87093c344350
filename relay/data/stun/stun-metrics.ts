/** Prometheus families of the STUN responder (read at scrape time from its stats object). */
import { byReason, counterFamily, type Family, oneSample } from '../../ops/metrics.js';
import type { StunStats } from './stun-responder.js';

export function stunFamilies(s: StunStats): Family[] {
  const p = 'tunnel_relay_stun_';
  return [
    counterFamily(
      `${p}datagrams_received_total`,
      'UDP datagrams received on the STUN port.',
      oneSample(s.requests),
    ),
    counterFamily(`${p}answered_total`, 'STUN Binding requests answered.', oneSample(s.answered)),
    counterFamily(
      `${p}dropped_total`,
      'Datagrams on the STUN port not answered, by reason.',
      byReason(s.dropped),
    ),
  ];
}
