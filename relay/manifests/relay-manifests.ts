/**
 * `tunnel-relay manifests relay`: Namespace, ServiceAccount, ConfigMap (the serve config file),
 * Deployment, Service, PodDisruptionBudget and NetworkPolicy for the relay. Secrets are referenced, not
 * created: the TLS certificate (`--tls-secret`, type kubernetes.io/tls) and, with `--store postgres`, the
 * store Secret (`url`: postgres://USER@HOST/DB, `password`: mounted as a file).
 */
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { INetworkPolicyPort } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPort';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import { Service } from 'kubernetes-models/v1/Service';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { stringify } from 'yaml';
import { TunnelError } from '../../shared/errors.js';
import {
  CONTAINER_SECURITY,
  labels,
  namespaceObject,
  POD_SECURITY,
  selector,
  serviceAccountObject,
} from './common.js';
import type { ManifestObject } from './render.js';
import type { Resources } from './resources.js';

export const RELAY_APP = 'tunnel-relay';
export const RELAY_PORT = 8443;
export const SERVICE_TYPES = ['LoadBalancer', 'NodePort', 'ClusterIP'] as const;
const CONFIG_DIR = '/etc/tunnel-relay';
const TLS_DIR = '/etc/tunnel-relay/tls';
const STORE_DIR = '/etc/tunnel-relay/store';
const POSTGRES_PORT = 5432;
const UDP: 'UDP' = 'UDP';
const TCP: 'TCP' = 'TCP';

export const RELAY_DEFAULT_RESOURCES: Resources = {
  requests: { cpu: '100m', memory: '128Mi' },
  limits: { memory: '1Gi' },
};

export interface RelayManifestOptions {
  namespace: string;
  image: string;
  publicUrl: string;
  replicas: number;
  store: 'sqlite' | 'postgres';
  /** Secret with keys `url` and `password` (postgres only). */
  storeSecret: string;
  /** kubernetes.io/tls Secret; null: the relay's self-signed certificate in its data dir. */
  tlsSecret: string | null;
  udpPort: number | null;
  /** HOST:PORT agents reach the UDP port at, when not the public URL's host and udpPort. */
  udpPublicEndpoint: string | null;
  stunPort: number | null;
  serviceType: (typeof SERVICE_TYPES)[number];
  /** Size of the SQLite data volume. */
  storageSize: string;
  resources: Resources;
}

/** Several replicas share one store and one certificate, so they need PostgreSQL and a TLS Secret. */
export function checkRelayOptions(o: RelayManifestOptions): void {
  if (o.replicas > 1 && o.store !== 'postgres') {
    throw new TunnelError(
      'BAD_INPUT',
      `--replicas ${o.replicas} needs --store postgres: SQLite is one file on one volume, for one replica`,
    );
  }
  if (o.replicas > 1 && o.tlsSecret === null) {
    throw new TunnelError(
      'BAD_INPUT',
      `--replicas ${o.replicas} needs --tls-secret: each replica would otherwise make its own self-signed certificate`,
    );
  }
}

function configFile(o: RelayManifestOptions): string {
  return stringify({
    listen: `0.0.0.0:${RELAY_PORT}`,
    'public-url': o.publicUrl,
    'data-dir': '/data',
    'udp-port': o.udpPort ?? 'off',
    ...(o.udpPort !== null && o.udpPublicEndpoint !== null
      ? { 'udp-public-endpoint': o.udpPublicEndpoint }
      : {}),
    'stun-port': o.stunPort ?? 'off',
    ...(o.tlsSecret ? { 'tls-cert': `${TLS_DIR}/tls.crt`, 'tls-key': `${TLS_DIR}/tls.key` } : {}),
  });
}

function udpPorts(o: RelayManifestOptions): { name: string; port: number }[] {
  return [
    ...(o.udpPort === null ? [] : [{ name: 'wireguard', port: o.udpPort }]),
    ...(o.stunPort === null ? [] : [{ name: 'stun', port: o.stunPort }]),
  ];
}

function volumes(o: RelayManifestOptions): IVolume[] {
  const data =
    o.store === 'sqlite'
      ? { name: 'data', persistentVolumeClaim: { claimName: `${RELAY_APP}-data` } }
      : { name: 'data', emptyDir: {} };
  return [
    data,
    { name: 'tmp', emptyDir: {} },
    { name: 'config', configMap: { name: `${RELAY_APP}-config` } },
    ...(o.tlsSecret ? [{ name: 'tls', secret: { secretName: o.tlsSecret, defaultMode: 0o440 } }] : []),
    ...(o.store === 'postgres'
      ? [
          {
            name: 'store',
            secret: {
              secretName: o.storeSecret,
              defaultMode: 0o440,
              items: [{ key: 'password', path: 'password' }],
            },
          },
        ]
      : []),
  ];
}

function mounts(o: RelayManifestOptions): IVolumeMount[] {
  return [
    { name: 'data', mountPath: '/data' },
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
    ...(o.tlsSecret ? [{ name: 'tls', mountPath: TLS_DIR, readOnly: true }] : []),
    ...(o.store === 'postgres' ? [{ name: 'store', mountPath: STORE_DIR, readOnly: true }] : []),
  ];
}

function storeEnv(o: RelayManifestOptions): IEnvVar[] {
  if (o.store !== 'postgres') return [];
  return [
    { name: 'TUNNEL_RELAY_STORE', valueFrom: { secretKeyRef: { name: o.storeSecret, key: 'url' } } },
    { name: 'TUNNEL_RELAY_STORE_PASSWORD_FILE', value: `${STORE_DIR}/password` },
  ];
}

function deployment(o: RelayManifestOptions): Deployment {
  const probe = (path: string, periodSeconds: number): IProbe => ({
    httpGet: { path, port: 'https', scheme: 'HTTPS' },
    periodSeconds,
    timeoutSeconds: 3,
  });
  return new Deployment({
    metadata: { name: RELAY_APP, namespace: o.namespace, labels: labels(RELAY_APP) },
    spec: {
      replicas: o.replicas,
      // One SQLite volume cannot be mounted by the old and the new pod at once.
      strategy:
        o.store === 'sqlite'
          ? { type: 'Recreate' }
          : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      selector: { matchLabels: selector(RELAY_APP) },
      template: {
        metadata: { labels: labels(RELAY_APP) },
        spec: {
          serviceAccountName: RELAY_APP,
          automountServiceAccountToken: false,
          securityContext: POD_SECURITY,
          terminationGracePeriodSeconds: 30,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: 'kubernetes.io/hostname',
                    labelSelector: { matchLabels: selector(RELAY_APP) },
                  },
                },
              ],
            },
          },
          containers: [
            {
              name: 'relay',
              image: o.image,
              args: ['tunnel-relay', 'serve', '--config', `${CONFIG_DIR}/config.yaml`, '--output', 'json'],
              ...(o.store === 'postgres' ? { env: storeEnv(o) } : {}),
              ports: [
                { name: 'https', containerPort: RELAY_PORT, protocol: 'TCP' },
                ...udpPorts(o).map((p) => ({ name: p.name, containerPort: p.port, protocol: UDP })),
              ],
              readinessProbe: probe('/readyz', 5),
              livenessProbe: { ...probe('/healthz', 10), failureThreshold: 3 },
              // Endpoints drop the pod before SIGTERM: new connections go elsewhere while this one drains.
              lifecycle: { preStop: { exec: { command: ['sleep', '5'] } } },
              ...(o.resources.requests || o.resources.limits ? { resources: o.resources } : {}),
              securityContext: CONTAINER_SECURITY,
              volumeMounts: mounts(o),
            },
          ],
          volumes: volumes(o),
        },
      },
    },
  });
}

function service(o: RelayManifestOptions): Service {
  return new Service({
    metadata: { name: RELAY_APP, namespace: o.namespace, labels: labels(RELAY_APP) },
    spec: {
      type: o.serviceType,
      // STUN answers with the address the packet came from: keep the client's, not a node's.
      ...(o.serviceType === 'ClusterIP' ? {} : { externalTrafficPolicy: 'Local' }),
      selector: selector(RELAY_APP),
      ports: [
        { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' },
        ...udpPorts(o).map((p) => ({ name: p.name, port: p.port, targetPort: p.name, protocol: UDP })),
      ],
    },
  });
}

function networkPolicy(o: RelayManifestOptions): NetworkPolicy {
  const dns: INetworkPolicyPort[] = [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ];
  return new NetworkPolicy({
    metadata: { name: RELAY_APP, namespace: o.namespace, labels: labels(RELAY_APP) },
    spec: {
      podSelector: { matchLabels: selector(RELAY_APP) },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          ports: [
            { protocol: 'TCP', port: RELAY_PORT },
            ...udpPorts(o).map((p) => ({ protocol: UDP, port: p.port })),
          ],
        },
      ],
      egress: [
        { ports: dns },
        ...(o.store === 'postgres' ? [{ ports: [{ protocol: TCP, port: POSTGRES_PORT }] }] : []),
        // The direct path: the hub node sends WireGuard to agents' public UDP endpoints, any port.
        ...(o.udpPort === null ? [] : [{ ports: [{ protocol: UDP }] }]),
      ],
    },
  });
}

export function relayManifests(o: RelayManifestOptions): ManifestObject[] {
  checkRelayOptions(o);
  const meta = (name: string) => ({ name, namespace: o.namespace, labels: labels(RELAY_APP) });
  return [
    namespaceObject(o.namespace),
    serviceAccountObject(RELAY_APP, o.namespace),
    new ConfigMap({ metadata: meta(`${RELAY_APP}-config`), data: { 'config.yaml': configFile(o) } }),
    ...(o.store === 'sqlite'
      ? [
          new PersistentVolumeClaim({
            metadata: meta(`${RELAY_APP}-data`),
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: o.storageSize } } },
          }),
        ]
      : []),
    deployment(o),
    service(o),
    new PodDisruptionBudget({
      metadata: meta(RELAY_APP),
      spec: { maxUnavailable: 1, selector: { matchLabels: selector(RELAY_APP) } },
    }),
    networkPolicy(o),
  ];
}
