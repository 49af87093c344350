/**
 * The generated manifests for a matrix of flags, rendered to YAML, parsed back document by document and
 * validated against the Kubernetes OpenAPI schemas (test/helpers/kubernetes-schema.ts); then the
 * properties the flags promise are checked on the parsed objects.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { type IStatefulSet, StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { Secret } from 'kubernetes-models/v1/Secret';
import { type IService, Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { describe, expect, it } from 'vitest';
import { type K8sDoc, validateYamlStream } from '../../../test/helpers/kubernetes-schema.js';
import { resolveRelayConfig } from '../../ops/config/config.js';
import { type AgentFlags, agentOptions } from './agent-flags.js';
import { AGENT_TERMINATION_GRACE_SECONDS, agentManifests } from './agent-manifests.js';
import { parseClusterRoleFlag } from './flag-values.js';
import { type RelayFlags, relayOptions } from './relay-flags.js';
import { relayManifests } from './relay-manifests.js';
import { renderManifests } from './render.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function relayYaml(flags: Partial<RelayFlags>): K8sDoc[] {
  const text = renderManifests(
    relayManifests(relayOptions({ publicUrl: 'https://relay.example.com', ...flags })),
  );
  return validateYamlStream(text);
}

function agentYaml(flags: Partial<AgentFlags>): K8sDoc[] {
  const text = renderManifests(
    agentManifests(agentOptions({ cluster: 'edge-1', relay: 'https://relay.example.com', ...flags })),
  );
  return validateYamlStream(text);
}

function find<T>(docs: K8sDoc[], is: (v: unknown) => v is T): T {
  const d: unknown = docs.find((x) => is(x));
  if (!is(d)) throw new Error(`not among ${docs.map((x) => x.kind).join(', ')}`);
  return d;
}

function podOf(w: { spec?: { template: { spec?: IPodSpec } } }): IPodSpec {
  const pod = w.spec?.template.spec;
  if (!pod) throw new Error('no pod spec');
  return pod;
}

function container(w: { spec?: { template: { spec?: IPodSpec } } }): IContainer {
  const c = podOf(w).containers[0];
  if (!c) throw new Error('no container');
  return c;
}

const kinds = (docs: K8sDoc[]) => docs.map((d) => d.kind);

/** The relay's workload: a Deployment, or a fleet's StatefulSet. */
function workload(docs: K8sDoc[]): IDeployment | IStatefulSet {
  const d: unknown = docs.find((x) => Deployment.is(x) || StatefulSet.is(x));
  if (Deployment.is(d) || StatefulSet.is(d)) return d;
  throw new Error(`no workload among ${docs.map((x) => x.kind).join(', ')}`);
}

const RESOURCE_MATRIX: Partial<RelayFlags>[] = [
  {},
  { resourceQosClass: 'Default' },
  { resourceQosClass: 'BestEffort' },
  {
    resourceQosClass: 'ResourceRequirement',
    resourceLimits: 'cpu=800m,memory=800Mi',
    resourceRequests: 'cpu=400m,memory=400Mi',
  },
  { resourceQosClass: 'ResourceRequirement', resourceRequests: 'cpu=1,ephemeral-storage=1Gi' },
];

const RELAY_MATRIX: Partial<RelayFlags>[] = [
  {},
  { namespace: 'relay-ns', image: 'registry.example/wg-relay-tunnel:9.9.9' },
  { udpPort: 'off', stunPort: 'off', serviceType: 'ClusterIP' },
  { udpPort: 41641, stunPort: 'off', serviceType: 'NodePort', udpPublicEndpoint: 'udp.example.com:41641' },
  { store: 'postgres', replicas: '3', tlsSecret: 'relay-tls', storeSecret: 'pg' },
  { store: 'postgres', tlsSecret: 'relay-tls' },
];

describe('relay manifests', () => {
  it.each(RELAY_MATRIX.flatMap((base) => RESOURCE_MATRIX.map((r) => ({ ...base, ...r }))))(
    'pass the Kubernetes schemas: %j',
    (flags) => {
      const docs = relayYaml(flags);
      expect(kinds(docs)).toEqual(
        expect.arrayContaining([
          'Namespace',
          'ServiceAccount',
          'ConfigMap',
          'Service',
          'PodDisruptionBudget',
          'NetworkPolicy',
        ]),
      );
      expect(workload(docs).kind).toBe(
        flags.replicas && flags.replicas !== '1' ? 'StatefulSet' : 'Deployment',
      );
      const ns = flags.namespace ?? 'tunnel-system';
      for (const d of docs) if (d.kind !== 'Namespace') expect(d.metadata.namespace).toBe(ns);
    },
  );

  it('runs non-root on a read-only root filesystem, with probes, anti-affinity and a drain hook', () => {
    const dep = find(relayYaml({}), Deployment.is);
    const pod = podOf(dep);
    const c = container(dep);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
    });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', scheme: 'HTTPS' });
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', scheme: 'HTTPS' });
    expect(c.lifecycle?.preStop?.exec?.command?.[0]).toBe('sleep');
    expect(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
  });

  it('exposes TCP 443 always and UDP WireGuard / STUN only when enabled', () => {
    const ports = (flags: Partial<RelayFlags>) =>
      (find(relayYaml(flags), Service.is).spec?.ports ?? []).map((p) => `${p.protocol}/${p.port}`);
    expect(ports({})).toEqual(['TCP/443', 'UDP/51820', 'UDP/3478']);
    expect(ports({ udpPort: 'off', stunPort: 'off' })).toEqual(['TCP/443']);
    expect(ports({ udpPort: 41641, stunPort: 'off' })).toEqual(['TCP/443', 'UDP/41641']);
  });

  it('maps the seeds resource flags onto the container', () => {
    expect(
      container(find(relayYaml({ resourceQosClass: 'BestEffort' }), Deployment.is)).resources,
    ).toBeUndefined();
    expect(
      container(
        find(
          relayYaml({
            resourceQosClass: 'ResourceRequirement',
            resourceLimits: 'cpu=800m,memory=800Mi',
            resourceRequests: 'cpu=400m,memory=400Mi',
          }),
          Deployment.is,
        ),
      ).resources,
    ).toEqual({ limits: { cpu: '800m', memory: '800Mi' }, requests: { cpu: '400m', memory: '400Mi' } });
  });

  it('with PostgreSQL: the store URL and password come from the Secret, no data volume claim', () => {
    const docs = relayYaml({ store: 'postgres', replicas: '3', tlsSecret: 'relay-tls', storeSecret: 'pg' });
    expect(kinds(docs)).not.toContain('PersistentVolumeClaim');
    const dep = workload(docs);
    expect(dep.spec?.replicas).toBe(3);
    const env = container(dep).env;
    expect(env).toContainEqual({
      name: 'TUNNEL_RELAY_STORE',
      valueFrom: { secretKeyRef: { name: 'pg', key: 'url' } },
    });
    expect(podOf(dep).volumes).toContainEqual(
      expect.objectContaining({ name: 'store', secret: expect.objectContaining({ secretName: 'pg' }) }),
    );
    expect(podOf(dep).volumes).toContainEqual(
      expect.objectContaining({ name: 'tls', secret: expect.objectContaining({ secretName: 'relay-tls' }) }),
    );
    expect(find(docs, NetworkPolicy.is).spec?.egress).toContainEqual({
      ports: [{ protocol: 'TCP', port: 5432 }],
    });
  });

  it('passes --udp-public-endpoint to serve only while the UDP port is on', () => {
    const config = (flags: Partial<RelayFlags>) => find(relayYaml(flags), ConfigMap.is).data?.['config.yaml'];
    expect(config({ udpPublicEndpoint: 'udp.example.com:51820' })).toContain(
      'udp-public-endpoint: udp.example.com:51820',
    );
    expect(config({})).not.toContain('udp-public-endpoint');
    expect(() => relayYaml({ udpPort: 'off', udpPublicEndpoint: 'udp.example.com:1' })).toThrow(
      /--udp-public-endpoint only applies while --udp-port is on/,
    );
  });

  it('with PostgreSQL: the fleet keys come from Secrets, each replica dials its pod IP, replicas reach each other', () => {
    const docs = relayYaml({
      store: 'postgres',
      replicas: '3',
      tlsSecret: 'relay-tls',
      meshKeySecret: 'mesh',
    });
    const dep = workload(docs);
    const volumes = podOf(dep).volumes ?? [];
    expect(volumes).toContainEqual({
      name: 'hub-key',
      secret: {
        secretName: 'tunnel-relay-hub-key',
        defaultMode: 0o440,
        items: [{ key: 'hub.key', path: 'hub.key' }],
      },
    });
    expect(volumes).toContainEqual({
      name: 'mesh-key',
      secret: { secretName: 'mesh', defaultMode: 0o440, items: [{ key: 'mesh.key', path: 'mesh.key' }] },
    });
    const config = find(docs, ConfigMap.is).data?.['config.yaml'] ?? '';
    expect(config).toContain('hub-key-file: /etc/tunnel-relay/hub/hub.key');
    expect(config).toContain('mesh-key-file: /etc/tunnel-relay/mesh/mesh.key');
    const env = container(dep).env ?? [];
    expect(env).toContainEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    // $(POD_IP) expands only from a variable defined before it.
    const at = (name: string) => env.findIndex((e) => e.name === name);
    expect(env[at('TUNNEL_RELAY_MESH_URL')]?.value).toBe('https://$(POD_IP):8443');
    expect(at('POD_IP')).toBeLessThan(at('TUNNEL_RELAY_MESH_URL'));
    expect(find(docs, NetworkPolicy.is).spec?.egress).toContainEqual({
      to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'tunnel-relay' } } }],
      ports: [{ protocol: 'TCP', port: 8443 }],
    });
    const sqlite = find(relayYaml({}), ConfigMap.is).data?.['config.yaml'] ?? '';
    expect(sqlite).not.toMatch(/hub-key-file|mesh-key-file/);
  });

  it("with PostgreSQL: serve accepts the ConfigMap's config file and the pod's environment as a fleet replica", () => {
    const docs = relayYaml({ store: 'postgres', replicas: '3', tlsSecret: 'relay-tls' });
    // The pod's mounts, under a temporary directory instead of /etc/tunnel-relay.
    const root = mkdtempSync(join(tmpdir(), 'relay-pod-'));
    for (const [file, text] of [
      ['mesh/mesh.key', `${'k'.repeat(48)}\n`],
      ['hub/hub.key', `${'A'.repeat(43)}=\n`],
      ['store/password', 'pw\n'],
    ] as const) {
      mkdirSync(join(root, dirname(file)), { recursive: true });
      writeFileSync(join(root, file), text, { mode: 0o600 });
    }
    const yamlText = (find(docs, ConfigMap.is).data?.['config.yaml'] ?? '').replaceAll(
      '/etc/tunnel-relay/',
      `${root}/`,
    );
    writeFileSync(join(root, 'config.yaml'), yamlText);
    const podEnv: Record<string, string> = {
      POD_IP: '10.1.2.3',
      POD_NAME: 'tunnel-relay-1',
      TUNNEL_RELAY_STORE: 'postgres://relay@db/relay',
    };
    for (const e of container(workload(docs)).env ?? []) {
      if (e.value !== undefined)
        podEnv[e.name] = e.value
          .replaceAll('$(POD_IP)', podEnv.POD_IP!)
          .replaceAll('$(POD_NAME)', podEnv.POD_NAME!)
          .replaceAll('/etc/tunnel-relay/', `${root}/`);
    }
    const c = resolveRelayConfig({ configFile: join(root, 'config.yaml'), env: podEnv });
    expect(c.store.kind).toBe('postgres');
    expect(c.mesh.url).toBe('https://10.1.2.3:8443');
    expect(c.mesh.key).not.toBeNull();
    expect(c.hubKeyFile).toBe(join(root, 'hub/hub.key'));
    expect(c.tlsCert).toBe(join(root, 'tls/tls.crt'));
    expect(c.drainGraceMs).toBe(10_000);
    expect(c.udpPort).toBe(51820);
    expect(c.udpPublicEndpoint).toBe('tunnel-relay-1.relay.example.com:51820');
  });

  it('stops within the drain grace: preStop, then --drain-grace, inside terminationGracePeriodSeconds', () => {
    for (const [flags, grace] of [
      [{}, 10],
      [{ drainGrace: '45' }, 45],
    ] as const) {
      const docs = relayYaml(flags);
      const dep = workload(docs);
      expect(find(docs, ConfigMap.is).data?.['config.yaml']).toContain(`drain-grace: ${grace}`);
      const sleep = Number(container(dep).lifecycle?.preStop?.exec?.command?.[1]);
      expect(podOf(dep).terminationGracePeriodSeconds).toBeGreaterThan(sleep + grace);
    }
    expect(() => relayYaml({ drainGrace: '0' })).toThrow(
      /--drain-grace "0" is not whole seconds from 1 to 3600/,
    );
    expect(() => relayYaml({ drainGrace: '1m' })).toThrow(/--drain-grace "1m"/);
  });

  it('with --replicas > 1 each replica has its own UDP Service and public endpoint; the shared one has none', () => {
    const fleet = { store: 'postgres', replicas: '2', tlsSecret: 'relay-tls' } as const;
    const docs = relayYaml(fleet);
    const services = docs.filter((d): d is K8sDoc & IService => Service.is(d));
    const ports = (svc: IService | undefined) =>
      (svc?.spec?.ports ?? []).map((p) => `${p.protocol}/${p.port}`);
    const named = (name: string) => services.find((svc) => svc.metadata?.name === name);
    expect(ports(named('tunnel-relay'))).toEqual(['TCP/443', 'UDP/3478']);
    for (const i of [0, 1]) {
      const svc = named(`tunnel-relay-udp-${i}`);
      expect(ports(svc)).toEqual(['UDP/51820']);
      expect(svc?.spec?.selector).toMatchObject({
        'statefulset.kubernetes.io/pod-name': `tunnel-relay-${i}`,
      });
      expect(svc?.spec?.type).toBe('LoadBalancer');
      expect(svc?.metadata?.annotations?.['external-dns.alpha.kubernetes.io/hostname']).toBe(
        `tunnel-relay-${i}.relay.example.com`,
      );
    }
    expect(named('tunnel-relay-udp-2')).toBeUndefined();
    const set = workload(docs);
    expect(set.kind).toBe('StatefulSet');
    expect(StatefulSet.is(set) && set.spec?.serviceName).toBe('tunnel-relay-pods');
    expect(named('tunnel-relay-pods')?.spec?.clusterIP).toBe('None');
    // Each pod is told its own endpoint; $(POD_NAME) expands only from a variable defined before it.
    const env = container(set).env ?? [];
    const at = (name: string) => env.findIndex((e) => e.name === name);
    expect(env[at('TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT')]?.value).toBe('$(POD_NAME).relay.example.com:51820');
    expect(at('POD_NAME')).toBeLessThan(at('TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT'));
    expect(find(docs, ConfigMap.is).data?.['config.yaml']).not.toContain('udp-public-endpoint');
    // A template of the operator's; one address for every replica is refused, naming the flag.
    const custom = relayYaml({ ...fleet, udpPort: 4500, udpPublicEndpoint: '{pod}.udp.example.com:4500' });
    const customEnv = container(workload(custom)).env ?? [];
    expect(customEnv.find((e) => e.name === 'TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT')?.value).toBe(
      '$(POD_NAME).udp.example.com:4500',
    );
    expect(() => relayYaml({ ...fleet, udpPublicEndpoint: 'udp.example.com:51820' })).toThrow(
      /--udp-public-endpoint "udp.example.com:51820" with --replicas 2 names one address for every replica/,
    );
    expect(() => relayYaml({ udpPublicEndpoint: '{pod}.udp.example.com:51820' })).toThrow(
      /\{pod\} only applies with --replicas > 1/,
    );
    // --udp-port off: no UDP Service per replica, relayed only.
    const off = relayYaml({ ...fleet, udpPort: 'off' });
    expect(off.filter((d) => d.metadata.name?.startsWith('tunnel-relay-udp-'))).toEqual([]);
  });

  it('refuses --replicas > 1 without PostgreSQL or without a TLS Secret, naming the flag', () => {
    expect(() => relayYaml({ replicas: '2' })).toThrow(/--replicas 2 needs --store postgres/);
    expect(() => relayYaml({ replicas: '2', store: 'postgres' })).toThrow(/--replicas 2 needs --tls-secret/);
    expect(() => relayYaml({ replicas: '0' })).toThrow(/--replicas "0"/);
    expect(() => relayYaml({ publicUrl: 'http://relay' })).toThrow(
      /--public-url "http:\/\/relay" must be https/,
    );
  });
});

const AGENT_MATRIX: Partial<AgentFlags>[] = [
  {},
  { psk: 'tpsk_abc', caPin: `sha256:${'a'.repeat(64)}` },
  { namespace: 'agents', upstream: 'https://10.0.0.1:6443', allow: ['prometheus.monitoring:9090', "it's:1"] },
  {
    psk: 'tpsk_abc',
    httpsProxy: 'http://user:pw@proxy.corp:3128',
    httpProxy: 'proxy.corp:3128',
    noProxy: '.svc,.cluster.local,10.0.0.0/8',
  },
];

describe('agent manifests', () => {
  it.each(AGENT_MATRIX.flatMap((base) => RESOURCE_MATRIX.map((r) => ({ ...base, ...r }))))(
    'pass the Kubernetes schemas: %j',
    (flags) => {
      const docs = agentYaml(flags);
      expect(kinds(docs)).toEqual(
        expect.arrayContaining([
          'Namespace',
          'ServiceAccount',
          'StatefulSet',
          'ClusterRole',
          'ClusterRoleBinding',
        ]),
      );
      expect(kinds(docs)).not.toContain('Role');
    },
  );

  it('mounts a projected, expiring service-account token with the cluster CA where the agent looks', () => {
    const sts = find(agentYaml({}), StatefulSet.is);
    const pod = podOf(sts);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(container(sts).volumeMounts).toContainEqual({
      name: 'kube-api-access',
      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      readOnly: true,
    });
    const sources = pod.volumes?.find((v) => v.name === 'kube-api-access')?.projected?.sources;
    expect(sources).toContainEqual({ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } });
    expect(sources).toContainEqual({
      configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
    });
  });

  it('lets the agent impersonate users and exactly the relay groups that reach its cluster, and count nodes', () => {
    const docs = agentYaml({ namespace: 'agents', group: 'team-a' });
    const role = find(docs, ClusterRole.is);
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['users'], verbs: ['impersonate'] },
      {
        apiGroups: [''],
        resources: ['groups'],
        verbs: ['impersonate'],
        resourceNames: ['tunnel-relay:admin', 'tunnel-relay:viewer', 'tunnel-relay:group-editor:team-a'],
      },
      { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
    ]);
    const all: unknown[] = docs;
    const bindings = all.filter(ClusterRoleBinding.is);
    expect(bindings.map((b) => [b.metadata?.name, b.roleRef.name, b.subjects?.[0]?.name])).toEqual([
      ['tunnel-client-impersonator', 'tunnel-client-impersonator', 'tunnel-client'],
      ['tunnel-relay:admin', 'cluster-admin', 'tunnel-relay:admin'],
      ['tunnel-relay:viewer', 'view', 'tunnel-relay:viewer'],
      ['tunnel-relay:group-editor:team-a', 'edit', 'tunnel-relay:group-editor:team-a'],
    ]);
    expect(bindings[0]?.subjects?.[0]).toEqual({
      kind: 'ServiceAccount',
      name: 'tunnel-client',
      namespace: 'agents',
    });
  });

  it('changes or leaves out the group bindings as the flags say', () => {
    const docs = agentYaml({
      adminClusterRole: 'ops-admin',
      viewerClusterRole: null,
      groupEditorClusterRole: null,
    });
    const names = docs.filter((d) => d.kind === 'ClusterRoleBinding').map((d) => d.metadata.name);
    expect(names).toEqual(['tunnel-client-impersonator', 'tunnel-relay:admin']);
    expect(JSON.stringify(docs)).toContain('"name":"ops-admin"');
    expect(() => parseClusterRoleFlag('--viewer-cluster-role')('a b')).toThrow(/not a ClusterRole name/);
    expect(parseClusterRoleFlag('--viewer-cluster-role')('none')).toBeNull();
  });

  it('keeps its identity on a claim per pod, carries the PSK only in the Secret', () => {
    const docs = agentYaml({ psk: 'tpsk_secret', caPin: `sha256:${'b'.repeat(64)}` });
    const sts = find(docs, StatefulSet.is);
    expect(sts.spec?.volumeClaimTemplates?.[0]?.metadata?.name).toBe('state');
    expect(container(sts).volumeMounts).toContainEqual({ name: 'state', mountPath: '/state' });
    expect(find(docs, ServiceAccount.is).automountServiceAccountToken).toBe(false);
    expect(find(docs, Secret.is).stringData).toEqual({ psk: 'tpsk_secret' });
    expect(JSON.stringify(sts)).not.toContain('tpsk_secret');
    expect(container(sts).securityContext?.readOnlyRootFilesystem).toBe(true);
  });

  it('runs --replicas N agent pods, each on its own claim, one down at a time, with the drain grace', () => {
    const docs = agentYaml({ replicas: '3' });
    const sts = find(docs, StatefulSet.is);
    expect(sts.spec?.replicas).toBe(3);
    expect(sts.spec?.volumeClaimTemplates?.[0]?.metadata?.name).toBe('state');
    expect(podOf(sts).terminationGracePeriodSeconds).toBe(AGENT_TERMINATION_GRACE_SECONDS);
    const pdb = find(docs, PodDisruptionBudget.is);
    expect(pdb.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: sts.spec?.selector.matchLabels },
    });
    expect(agentYaml({}).some((d) => d.kind === 'PodDisruptionBudget')).toBe(false);
    for (const bad of ['0', '11', 'two']) {
      expect(() => agentYaml({ replicas: bad })).toThrow(
        expect.objectContaining({ code: 'AGENT_REPLICAS_INVALID', message: expect.stringContaining(bad) }),
      );
    }
  });

  it('passes the proxy settings and the proxy CA through', () => {
    const docs = agentYaml({
      httpsProxy: 'http://proxy.corp:3128',
      noProxy: '.svc,10.0.0.0/8',
      proxyCaFile: writePem(),
    });
    const c = container(find(docs, StatefulSet.is));
    expect(c.env).toContainEqual({ name: 'HTTPS_PROXY', value: 'http://proxy.corp:3128/' });
    expect(c.env).toContainEqual({ name: 'NO_PROXY', value: '.svc,10.0.0.0/8' });
    expect(c.args?.[2]).toContain('--proxy-ca-file /etc/tunnel-client/proxy-ca/ca.crt');
    expect(find(docs, ConfigMap.is).data?.['ca.crt']).toBe(PEM);
  });

  it('quotes allowlist entries for the shell', () => {
    const c = container(find(agentYaml({ allow: ['db.internal:5432'] }), StatefulSet.is));
    expect(c.args?.[2]).toContain(
      "--upstream 'https://kubernetes.default.svc:443' --allow 'db.internal:5432'",
    );
  });
});

function writePem(): string {
  const f = join(mkdtempSync(join(tmpdir(), 'manifests-')), 'ca.crt');
  writeFileSync(f, PEM);
  return f;
}
