/** `tunnel-relay manifests agent` flags into AgentManifestOptions (each bad value: BAD_INPUT naming the flag). */

import { readFileSync } from 'node:fs';
import { TunnelError } from '../../../shared/errors.js';
import { parseProxyUrl } from '../../../shared/kit/proxy/proxy-config.js';
import { checkAgentReplicas } from '../store/agent-replicas.js';
import { AGENT_DEFAULT_RESOURCES, type AgentManifestOptions, DEFAULT_UPSTREAM } from './agent-manifests.js';
import { DEFAULT_GROUP_BINDINGS } from './agent-rbac.js';
import { DEFAULT_NAMESPACE, defaultImage } from './flag-values.js';
import { parseQuantity } from './quantity.js';
import { type ResourceFlags, resolveResources } from './resources.js';

export interface AgentFlags extends ResourceFlags {
  cluster: string;
  relay: string;
  psk?: string;
  caPin?: string;
  namespace?: string;
  image?: string;
  upstream?: string;
  allow?: string[];
  httpsProxy?: string;
  httpProxy?: string;
  noProxy?: string;
  proxyCaFile?: string;
  storageSize?: string;
  /** Agent pods (each its own state volume and key); the cluster needs `cluster create --agent-replicas` as many. */
  replicas?: string;
  group?: string;
  /** ClusterRole names (or null: `none`, no binding) for the relay's groups. */
  adminClusterRole?: string | null;
  viewerClusterRole?: string | null;
  groupEditorClusterRole?: string | null;
}

function readProxyCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    const code = err instanceof Error && 'code' in err ? String(err.code) : 'read error';
    throw new TunnelError('BAD_INPUT', `--proxy-ca-file ${JSON.stringify(file)}: cannot read it (${code})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----') || pem.length > 256 * 1024) {
    throw new TunnelError(
      'BAD_INPUT',
      `--proxy-ca-file ${JSON.stringify(file)} holds no PEM certificate (or is over 256 KiB)`,
    );
  }
  return pem;
}

export function agentOptions(flags: AgentFlags): AgentManifestOptions {
  return {
    namespace: flags.namespace ?? DEFAULT_NAMESPACE,
    image: flags.image ?? defaultImage(),
    relay: flags.relay,
    cluster: flags.cluster,
    psk: flags.psk ?? null,
    caPin: flags.caPin ?? null,
    upstream: flags.upstream ?? DEFAULT_UPSTREAM,
    allow: flags.allow ?? [],
    proxy: {
      httpsProxy:
        flags.httpsProxy === undefined ? null : parseProxyUrl(flags.httpsProxy, '--https-proxy').href,
      httpProxy: flags.httpProxy === undefined ? null : parseProxyUrl(flags.httpProxy, '--http-proxy').href,
      noProxy: flags.noProxy ?? null,
      caPem: flags.proxyCaFile === undefined ? null : readProxyCa(flags.proxyCaFile),
    },
    storageSize: parseQuantity(flags.storageSize ?? '64Mi', '--storage-size').text,
    replicas:
      flags.replicas === undefined
        ? 1
        : checkAgentReplicas(
            /^\d{1,3}$/.test(flags.replicas) ? Number(flags.replicas) : flags.replicas,
            '--replicas',
          ),
    resources: resolveResources(flags, AGENT_DEFAULT_RESOURCES),
    group: flags.group ?? 'default',
    bindings: {
      admin: flags.adminClusterRole === undefined ? DEFAULT_GROUP_BINDINGS.admin : flags.adminClusterRole,
      viewer: flags.viewerClusterRole === undefined ? DEFAULT_GROUP_BINDINGS.viewer : flags.viewerClusterRole,
      groupEditor:
        flags.groupEditorClusterRole === undefined
          ? DEFAULT_GROUP_BINDINGS.groupEditor
          : flags.groupEditorClusterRole,
    },
  };
}
