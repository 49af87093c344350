/**
 * `tunnel-relay manifests agent`: Namespace, ServiceAccount, the RBAC of the agent's impersonation and of the
 * relay's groups (agent-rbac.ts), the join Secret (the bootstrap PSK), the proxy CA
 * ConfigMap when given, and a StatefulSet of `replicas` agent pods (with a projected, expiring service-account
 * token, so the agent reaches its API server as the pod); each pod's state dir (WireGuard key, agent credential)
 * lives on its own volume, so each pod is its own agent (its own key, address and credential: the cluster is
 * created with `--agent-replicas` as many) and keeps its identity when rescheduled: its first start joins with the
 * PSK, every later start runs from the saved state. With more than one replica a PodDisruptionBudget lets one pod
 * go at a time (the others serve meanwhile).
 */
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { Secret } from 'kubernetes-models/v1/Secret';
import { agentRbac, type RelayGroupBindings, serviceAccountVolume } from './agent-rbac.js';
import {
  CONTAINER_SECURITY,
  labels,
  namespaceObject,
  POD_SECURITY,
  selector,
  serviceAccountObject,
} from './common.js';
import { JOIN_SECRET } from './flag-values.js';
import type { ManifestObject } from './render.js';
import type { Resources } from './resources.js';

/**
 * The agent pod's termination grace: on SIGTERM the agent drains for up to 20 s (tunnel-client/agent/agent.ts
 * AGENT_STOP_GRACE_MS: the hub opens no new streams there, the open ones may end), then closes; 10 s more for that.
 */
export const AGENT_TERMINATION_GRACE_SECONDS = 30;

export const AGENT_APP = 'tunnel-client';
const PROXY_CA_DIR = '/etc/tunnel-client/proxy-ca';
/**
 * A directory the agent creates (0700, its own) inside the volume: the volume's root belongs to root on
 * many provisioners, and the agent sets its state dir to 0700, which only the owner may.
 */
const STATE_DIR = '/state/agent';
export const DEFAULT_UPSTREAM = 'https://kubernetes.default.svc:443';

export const AGENT_DEFAULT_RESOURCES: Resources = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { memory: '256Mi' },
};

export interface AgentProxy {
  httpsProxy: string | null;
  httpProxy: string | null;
  noProxy: string | null;
  /** PEM text of the proxy's CA (an https:// proxy, or a TLS-inspecting one). */
  caPem: string | null;
}

export interface AgentManifestOptions {
  namespace: string;
  image: string;
  relay: string;
  cluster: string;
  /** Bootstrap PSK for the join Secret; null: the Secret is left to the operator (same name and keys). */
  psk: string | null;
  caPin: string | null;
  upstream: string;
  allow: readonly string[];
  proxy: AgentProxy;
  storageSize: string;
  /** Agent pods, 1..10 (store/agent-replicas.ts MAX_AGENT_REPLICAS). */
  replicas: number;
  resources: Resources;
  /** The relay group of the cluster: its group editors are impersonated as tunnel-relay:group-editor:<group>. */
  group: string;
  bindings: RelayGroupBindings;
}

/** The pin flag only when CA_PIN is set (sh expansion; without one the system trust store is used). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
const PIN_ARG = ' ${CA_PIN:+--ca-pin "$CA_PIN"}';

/** `value` as one sh word: single-quoted, each `'` closed, escaped and reopened. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** First start: join (the PSK is spent) and keep running; later starts: run from the saved state. */
function startScript(o: AgentManifestOptions): string {
  const allow = o.allow.map((a) => ` --allow ${shellQuote(a)}`).join('');
  const proxyCa = o.proxy.caPem === null ? '' : ` --proxy-ca-file ${PROXY_CA_DIR}/ca.crt`;
  return (
    `if [ -f ${STATE_DIR}/state.json ]; then exec tunnel-client run --state-dir ${STATE_DIR}; fi; ` +
    `exec tunnel-client join --state-dir ${STATE_DIR} --relay "$RELAY" --cluster "$CLUSTER"` +
    `${PIN_ARG} --upstream ${shellQuote(o.upstream)}${allow}${proxyCa}`
  );
}

function env(o: AgentManifestOptions): IEnvVar[] {
  const plain = [
    ['RELAY', o.relay],
    ['CLUSTER', o.cluster],
    ['CA_PIN', o.caPin],
    ['HTTPS_PROXY', o.proxy.httpsProxy],
    ['HTTP_PROXY', o.proxy.httpProxy],
    ['NO_PROXY', o.proxy.noProxy],
  ] as const;
  return [
    ...plain.flatMap(([name, value]) => (value === null ? [] : [{ name, value }])),
    // Read by `tunnel-client join` itself, so the PSK is never on a command line. Optional: once joined,
    // the agent runs from its state dir and the Secret (its PSK spent) may be deleted.
    {
      name: 'TUNNEL_CLIENT_PSK',
      valueFrom: { secretKeyRef: { name: JOIN_SECRET, key: 'psk', optional: true } },
    },
  ];
}

function statefulSet(o: AgentManifestOptions): StatefulSet {
  const sa = serviceAccountVolume();
  return new StatefulSet({
    metadata: { name: AGENT_APP, namespace: o.namespace, labels: labels(AGENT_APP) },
    spec: {
      replicas: o.replicas,
      serviceName: AGENT_APP,
      selector: { matchLabels: selector(AGENT_APP) },
      template: {
        metadata: { labels: labels(AGENT_APP) },
        spec: {
          serviceAccountName: AGENT_APP,
          // The token is mounted by the projected volume below (expiring, re-read by the agent).
          automountServiceAccountToken: false,
          securityContext: POD_SECURITY,
          terminationGracePeriodSeconds: AGENT_TERMINATION_GRACE_SECONDS,
          containers: [
            {
              name: 'agent',
              image: o.image,
              args: ['sh', '-c', startScript(o)],
              env: env(o),
              resources: o.resources.requests || o.resources.limits ? o.resources : undefined,
              securityContext: CONTAINER_SECURITY,
              volumeMounts: [
                { name: 'state', mountPath: '/state' },
                { name: 'tmp', mountPath: '/tmp' },
                sa.mount,
                ...(o.proxy.caPem === null
                  ? []
                  : [{ name: 'proxy-ca', mountPath: PROXY_CA_DIR, readOnly: true }]),
              ],
            },
          ],
          volumes: [
            { name: 'tmp', emptyDir: {} },
            sa.volume,
            ...(o.proxy.caPem === null
              ? []
              : [{ name: 'proxy-ca', configMap: { name: `${AGENT_APP}-proxy-ca` } }]),
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'state' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: o.storageSize } } },
        },
      ],
    },
  });
}

export function agentManifests(o: AgentManifestOptions): ManifestObject[] {
  const meta = (name: string) => ({ name, namespace: o.namespace, labels: labels(AGENT_APP) });
  return [
    namespaceObject(o.namespace),
    serviceAccountObject(AGENT_APP, o.namespace),
    ...agentRbac({ app: AGENT_APP, namespace: o.namespace, group: o.group, bindings: o.bindings }),
    ...(o.psk === null
      ? []
      : [
          new Secret({
            metadata: meta(JOIN_SECRET),
            type: 'Opaque',
            stringData: { psk: o.psk },
          }),
        ]),
    ...(o.proxy.caPem === null
      ? []
      : [new ConfigMap({ metadata: meta(`${AGENT_APP}-proxy-ca`), data: { 'ca.crt': o.proxy.caPem } })]),
    statefulSet(o),
    ...(o.replicas > 1
      ? [
          new PodDisruptionBudget({
            metadata: meta(AGENT_APP),
            spec: { maxUnavailable: 1, selector: { matchLabels: selector(AGENT_APP) } },
          }),
        ]
      : []),
  ];
}
