/** /metrics families of the replica mesh, read at scrape time (labels are fixed names only). */
import {
  counterFamily as counter,
  type Family,
  gaugeFamily as gauge,
  oneSample as one,
} from '../../ops/metrics.js';
import type { MeshStats } from './mesh-node.js';

export function meshFamilies(s: MeshStats): Family[] {
  const p = 'tunnel_relay_mesh_';
  return [
    counter(`${p}requests_total`, 'Requests that carried the mesh header, by result of its check.', [
      [{ result: 'accepted' }, s.auth.accepted],
      [{ result: 'refused' }, s.auth.refused],
    ]),
    counter(`${p}forwarded_total`, 'Hub requests forwarded one hop to another replica, by kind.', [
      [{ kind: 'connect' }, s.forwarded.connect],
      [{ kind: 'upgrade' }, s.forwarded.upgrade],
      [{ kind: 'request' }, s.forwarded.request],
    ]),
    counter(
      `${p}forward_failures_total`,
      'Forwards whose replica could not be reached (dial, TLS, pin).',
      one(s.failed),
    ),
    gauge(`${p}forwards_open`, 'Forwarded connections open now.', s.open),
    gauge(
      `${p}replicas`,
      'Live replicas of the fleet (this one included) at the last heartbeat; 0 without a mesh.',
      s.replicas,
    ),
  ];
}
