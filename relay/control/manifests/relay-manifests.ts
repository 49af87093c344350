/**
 * `tunnel-relay manifests relay`: Namespace, ServiceAccount, ConfigMap (the serve config file),
 * Deployment (a fleet: StatefulSet, its headless Service and one UDP Service per replica,
 * relay-fleet-udp.ts), Service, PodDisruptionBudget and NetworkPolicy for the relay. Secrets are referenced, not
 * created: the TLS certificate (`--tls-secret`, type kubernetes.io/tls) and, with `--store postgres`, the
 * store Secret (`url`: postgres://USER@HOST/DB, `password`: mounted as a file) and the fleet's shared keys:
 * the hub key Secret (`hub.key`, --hub-key-file) and the mesh key Secret (`mesh.key`, --mesh-key-file); each
 * replica's --mesh-url is its pod IP (downward API). A pod that stops waits PRE_STOP_SECONDS (endpoints drop
 * it) and then drains within --drain-grace; terminationGracePeriodSeconds covers both.
 */
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { INetworkPolicyPort } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPort';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { IPodTemplateSpec } from 'kubernetes-models/v1/PodTemplateSpec';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import { Service } from 'kubernetes-models/v1/Service';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { stringify } from 'yaml';
import { TunnelError } from '../../../shared/errors.js';
import {
  CONTAINER_SECURITY,
  labels,
  namespaceObject,
  POD_SECURITY,
  selector,
  serviceAccountObject,
} from './common.js';
import type { SERVICE_TYPES } from './flag-values.js';
import {
  checkSingleUdpEndpoint,
  type FleetUdpOptions,
  fleetUdpEnv,
  fleetUdpTemplate,
  podsService,
  podUdpServices,
} from './relay-fleet-udp.js';
import type { ManifestObject } from './render.js';
import type { Resources } from './resources.js';

export const RELAY_APP = 'tunnel-relay';
export const RELAY_PORT = 8443;
const CONFIG_DIR = '/etc/tunnel-relay';
const TLS_DIR = '/etc/tunnel-relay/tls';
const STORE_DIR = '/etc/tunnel-relay/store';
const HUB_KEY_DIR = '/etc/tunnel-relay/hub';
const MESH_KEY_DIR = '/etc/tunnel-relay/mesh';
/** preStop sleep: Service endpoints drop the pod before SIGTERM starts the drain. */
export const PRE_STOP_SECONDS = 5;
/** terminationGracePeriodSeconds = preStop + drain grace + this, for the last close handshakes. */
const TERMINATION_MARGIN_SECONDS = 5;
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
  /** Secret with key `hub.key`: the fleet's hub WireGuard private key (postgres only). */
  hubKeySecret: string;
  /** Secret with key `mesh.key`: the key replicas authenticate mesh requests with (postgres only). */
  meshKeySecret: string;
  /** `serve --drain-grace`, seconds. */
  drainGraceSeconds: number;
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
  checkSingleUdpEndpoint(fleetUdp(o));
  if (o.replicas > 1 && o.udpPort !== null) fleetUdpTemplate(fleetUdp(o));
  if (o.replicas > 1 && o.tlsSecret === null) {
    throw new TunnelError(
      'BAD_INPUT',
      `--replicas ${o.replicas} needs --tls-secret: each replica would otherwise make its own self-signed certificate`,
    );
  }
}

/** What the fleet's per-replica UDP endpoints are made of (relay-fleet-udp.ts). */
function fleetUdp(o: RelayManifestOptions): FleetUdpOptions {
  return { app: RELAY_APP, ...o };
}

function configFile(o: RelayManifestOptions): string {
  return stringify({
    listen: `0.0.0.0:${RELAY_PORT}`,
    'public-url': o.publicUrl,
    'data-dir': '/data',
    'udp-port': o.udpPort ?? 'off',
    // A fleet's replicas each get their own (TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT, relay-fleet-udp.ts).
    'udp-public-endpoint':
      o.udpPort === null || o.replicas > 1 ? undefined : (o.udpPublicEndpoint ?? undefined),
    'stun-port': o.stunPort ?? 'off',
    'tls-cert': o.tlsSecret ? `${TLS_DIR}/tls.crt` : undefined,
    'tls-key': o.tlsSecret ? `${TLS_DIR}/tls.key` : undefined,
    'hub-key-file': o.store === 'postgres' ? `${HUB_KEY_DIR}/hub.key` : undefined,
    'mesh-key-file': o.store === 'postgres' ? `${MESH_KEY_DIR}/mesh.key` : undefined,
    'drain-grace': o.drainGraceSeconds,
  });
}

/** The pod's UDP ports; `shared`: those of the Service in front of every replica (a fleet's WireGuard port has a
 * Service per replica instead). */
function udpPorts(o: RelayManifestOptions, shared = false): { name: string; port: number }[] {
  const perReplica = shared && o.replicas > 1;
  return [
    ...(o.udpPort === null || perReplica ? [] : [{ name: 'wireguard', port: o.udpPort }]),
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
          secretVolume('store', o.storeSecret, 'password'),
          secretVolume('hub-key', o.hubKeySecret, 'hub.key'),
          secretVolume('mesh-key', o.meshKeySecret, 'mesh.key'),
        ]
      : []),
  ];
}

/** One key of a Secret as a file, readable by the pod's group only. */
function secretVolume(name: string, secretName: string, key: string): IVolume {
  return { name, secret: { secretName, defaultMode: 0o440, items: [{ key, path: key }] } };
}

function mounts(o: RelayManifestOptions): IVolumeMount[] {
  return [
    { name: 'data', mountPath: '/data' },
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
    ...(o.tlsSecret ? [{ name: 'tls', mountPath: TLS_DIR, readOnly: true }] : []),
    ...(o.store === 'postgres'
      ? [
          { name: 'store', mountPath: STORE_DIR, readOnly: true },
          { name: 'hub-key', mountPath: HUB_KEY_DIR, readOnly: true },
          { name: 'mesh-key', mountPath: MESH_KEY_DIR, readOnly: true },
        ]
      : []),
  ];
}

function storeEnv(o: RelayManifestOptions): IEnvVar[] {
  if (o.store !== 'postgres') return [];
  return [
    { name: 'TUNNEL_RELAY_STORE', valueFrom: { secretKeyRef: { name: o.storeSecret, key: 'url' } } },
    { name: 'TUNNEL_RELAY_STORE_PASSWORD_FILE', value: `${STORE_DIR}/password` },
    // Other replicas dial this one at its pod IP (Kubernetes expands $(POD_IP) from the variable above).
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'TUNNEL_RELAY_MESH_URL', value: `https://$(POD_IP):${RELAY_PORT}` },
    ...fleetUdpEnv(fleetUdp(o)),
  ];
}

/** The relay's pod (one per replica). */
function podTemplate(o: RelayManifestOptions): IPodTemplateSpec {
  const probe = (path: string, periodSeconds: number): IProbe => ({
    httpGet: { path, port: 'https', scheme: 'HTTPS' },
    periodSeconds,
    timeoutSeconds: 3,
  });
  return {
    metadata: { labels: labels(RELAY_APP) },
    spec: {
      serviceAccountName: RELAY_APP,
      automountServiceAccountToken: false,
      securityContext: POD_SECURITY,
      terminationGracePeriodSeconds: PRE_STOP_SECONDS + o.drainGraceSeconds + TERMINATION_MARGIN_SECONDS,
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
          env: o.store === 'postgres' ? storeEnv(o) : undefined,
          ports: [
            { name: 'https', containerPort: RELAY_PORT, protocol: 'TCP' },
            ...udpPorts(o).map((p) => ({ name: p.name, containerPort: p.port, protocol: UDP })),
          ],
          readinessProbe: probe('/readyz', 5),
          livenessProbe: { ...probe('/healthz', 10), failureThreshold: 3 },
          // Endpoints drop the pod before SIGTERM: new connections go elsewhere while this one drains.
          lifecycle: { preStop: { exec: { command: ['sleep', String(PRE_STOP_SECONDS)] } } },
          resources: o.resources.requests || o.resources.limits ? o.resources : undefined,
          securityContext: CONTAINER_SECURITY,
          volumeMounts: mounts(o),
        },
      ],
      volumes: volumes(o),
    },
  };
}

/** One replica: a Deployment. */
function deployment(o: RelayManifestOptions): Deployment {
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
      template: podTemplate(o),
    },
  });
}

/**
 * A fleet: a StatefulSet, so each replica has a stable name its own UDP Service selects (relay-fleet-udp.ts).
 * Started and replaced in parallel, one at a time on a rolling update (the PodDisruptionBudget's one too).
 */
function statefulSet(o: RelayManifestOptions): StatefulSet {
  return new StatefulSet({
    metadata: { name: RELAY_APP, namespace: o.namespace, labels: labels(RELAY_APP) },
    spec: {
      replicas: o.replicas,
      serviceName: podsService(fleetUdp(o)).metadata?.name ?? `${RELAY_APP}-pods`,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate' },
      selector: { matchLabels: selector(RELAY_APP) },
      template: podTemplate(o),
    },
  });
}

function service(o: RelayManifestOptions): Service {
  return new Service({
    metadata: { name: RELAY_APP, namespace: o.namespace, labels: labels(RELAY_APP) },
    spec: {
      type: o.serviceType,
      // STUN answers with the address the packet came from: keep the client's, not a node's.
      externalTrafficPolicy: o.serviceType === 'ClusterIP' ? undefined : 'Local',
      selector: selector(RELAY_APP),
      ports: [
        { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' },
        ...udpPorts(o, true).map((p) => ({ name: p.name, port: p.port, targetPort: p.name, protocol: UDP })),
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
        ...(o.store === 'postgres'
          ? [
              { ports: [{ protocol: TCP, port: POSTGRES_PORT }] },
              // The mesh: replicas forward hub requests to each other on the TLS port.
              {
                to: [{ podSelector: { matchLabels: selector(RELAY_APP) } }],
                ports: [{ protocol: TCP, port: RELAY_PORT }],
              },
            ]
          : []),
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
    ...(o.replicas > 1 ? [statefulSet(o), podsService(fleetUdp(o))] : [deployment(o)]),
    service(o),
    ...podUdpServices(fleetUdp(o)),
    new PodDisruptionBudget({
      metadata: meta(RELAY_APP),
      spec: { maxUnavailable: 1, selector: { matchLabels: selector(RELAY_APP) } },
    }),
    networkPolicy(o),
  ];
}
