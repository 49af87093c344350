/**
 * The direct path of a relay fleet (`manifests relay --replicas N` with `--udp-port`): each replica holds the
 * WireGuard sessions of the agents whose relay connection it has, and answers only those agents on its UDP port
 * (docs/NETWORK.md, "Relay fleets"), so each replica's UDP port needs an address of its own. The replicas run as
 * a StatefulSet (stable pod names `tunnel-relay-0` ...) with one Service per pod (`tunnel-relay-udp-0` ...,
 * selected by the `statefulset.kubernetes.io/pod-name` label) carrying that pod's WireGuard port; the shared
 * Service carries HTTPS and STUN only. Each replica is told its own public endpoint through
 * TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT: `--udp-public-endpoint` with `{pod}` standing for the pod's name
 * (default `{pod}.<public URL host>:<udp port>`); each per-pod Service carries that name in the external-dns
 * hostname annotation, so external-dns (or the operator) points it at the Service's address.
 */

import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { Service } from 'kubernetes-models/v1/Service';
import { TunnelError } from '../../../shared/errors.js';
import { labels, selector } from './common.js';

/** Stands for the pod's name in a fleet's `--udp-public-endpoint`. */
export const POD_PLACEHOLDER = '{pod}';
/** The label the StatefulSet controller puts on each pod: its name. */
const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
const EXTERNAL_DNS_HOSTNAME = 'external-dns.alpha.kubernetes.io/hostname';

export interface FleetUdpOptions {
  app: string;
  namespace: string;
  publicUrl: string;
  replicas: number;
  udpPort: number | null;
  udpPublicEndpoint: string | null;
  serviceType: 'LoadBalancer' | 'NodePort' | 'ClusterIP';
}

/** The fleet's per-pod endpoint template; BAD_INPUT when a given one names one address for every replica. */
export function fleetUdpTemplate(o: FleetUdpOptions): string {
  const given = o.udpPublicEndpoint;
  if (given === null) return `${POD_PLACEHOLDER}.${new URL(o.publicUrl).hostname}:${o.udpPort}`;
  if (!given.includes(POD_PLACEHOLDER))
    throw new TunnelError(
      'BAD_INPUT',
      `--udp-public-endpoint ${JSON.stringify(given)} with --replicas ${o.replicas} names one address for every ` +
        `replica; each replica needs its own: put ${POD_PLACEHOLDER} where its pod name goes ` +
        `(e.g. ${POD_PLACEHOLDER}.udp.example.com:${o.udpPort})`,
    );
  return given;
}

/** A single replica has no stable pod name to put in `--udp-public-endpoint`. */
export function checkSingleUdpEndpoint(o: FleetUdpOptions): void {
  if (o.replicas === 1 && o.udpPublicEndpoint?.includes(POD_PLACEHOLDER))
    throw new TunnelError(
      'BAD_INPUT',
      `--udp-public-endpoint ${JSON.stringify(o.udpPublicEndpoint)}: ${POD_PLACEHOLDER} only applies with --replicas > 1`,
    );
}

/** The pod's name and its own public UDP endpoint (Kubernetes expands $(POD_NAME) from the variable before). */
export function fleetUdpEnv(o: FleetUdpOptions): IEnvVar[] {
  if (o.replicas === 1 || o.udpPort === null) return [];
  return [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    {
      name: 'TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT',
      value: fleetUdpTemplate(o).replaceAll(POD_PLACEHOLDER, '$(POD_NAME)'),
    },
  ];
}

/** The host part of an endpoint `host:port` or `[v6]:port`. */
function hostOf(endpoint: string): string {
  return endpoint.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
}

/** One Service per replica carrying its WireGuard port (none without --udp-port or with one replica). */
export function podUdpServices(o: FleetUdpOptions): Service[] {
  if (o.replicas === 1 || o.udpPort === null) return [];
  const template = fleetUdpTemplate(o);
  const out: Service[] = [];
  for (let i = 0; i < o.replicas; i++) {
    const pod = `${o.app}-${i}`;
    const host = hostOf(template.replaceAll(POD_PLACEHOLDER, pod));
    out.push(
      new Service({
        metadata: {
          name: `${o.app}-udp-${i}`,
          namespace: o.namespace,
          labels: labels(o.app),
          annotations: { [EXTERNAL_DNS_HOSTNAME]: host },
        },
        spec: {
          type: o.serviceType,
          externalTrafficPolicy: o.serviceType === 'ClusterIP' ? undefined : 'Local',
          selector: { ...selector(o.app), [POD_NAME_LABEL]: pod },
          ports: [{ name: 'wireguard', port: o.udpPort, targetPort: 'wireguard', protocol: 'UDP' }],
        },
      }),
    );
  }
  return out;
}

/** The headless Service a StatefulSet names (`serviceName`): the pods' stable DNS names. */
export function podsService(o: Pick<FleetUdpOptions, 'app' | 'namespace'>): Service {
  return new Service({
    metadata: { name: `${o.app}-pods`, namespace: o.namespace, labels: labels(o.app) },
    spec: {
      clusterIP: 'None',
      selector: selector(o.app),
      ports: [{ name: 'https', port: 8443, targetPort: 'https', protocol: 'TCP' }],
    },
  });
}
