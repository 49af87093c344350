/** /metrics families of the connection guard: connections cut by reason, connections held by state. */
import { byReason, counterFamily, type Family } from '../metrics.js';
import type { ConnectionGuard } from './connection-guard.js';

export function httpConnectionFamilies(guard: ConnectionGuard): Family[] {
  const { total, pending } = guard.open;
  return [
    counterFamily(
      'tunnel_relay_http_connections_cut_total',
      'HTTP connections the relay cut or refused, by reason.',
      byReason(guard.stats.cut),
    ),
    {
      name: 'tunnel_relay_http_connections',
      help: 'TCP connections held on the relay port, by state (pending: no request finished or upgrade yet).',
      type: 'gauge',
      samples: [
        [{ state: 'pending' }, pending],
        [{ state: 'established' }, total - pending],
      ],
    },
  ];
}
