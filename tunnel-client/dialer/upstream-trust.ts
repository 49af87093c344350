/**
 * Upstream TLS trust of the agent's dialer (for `@upstream` with an https URL): the PEM file named by
 * TUNNEL_CLIENT_UPSTREAM_CA, else the in-cluster service-account CA when that file exists, else the
 * system roots. TUNNEL_CLIENT_UPSTREAM_INSECURE=1 turns verification off (tests, never production).
 * Path-proxy requests carry a token (token-injector.ts) from TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE, else, when the
 * upstream is the API server of the pod the agent runs in (in-cluster.ts), from the pod's service-account token
 * (re-read for every request: a rotated projected token is picked up without a restart).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TunnelError } from '../../shared/errors.js';
import type { HostPort } from './allowlist.js';
import { inClusterAddress, inClusterApi, isInClusterUpstream, serviceAccountDir } from './in-cluster.js';
import { readToken } from './token-injector.js';

export interface UpstreamTrust {
  ca?: string;
  insecure: boolean;
  /** TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: opt-in credential for path-proxy requests (token-injector.ts). */
  tokenFile?: string;
  /** The pod's API server written by its service name: connect to KUBERNETES_SERVICE_HOST/PORT instead. */
  dial?: HostPort;
}

/** `upstream`: the saved default upstream (null: none). */
export function upstreamTrust(env: NodeJS.ProcessEnv, upstream: string | null): UpstreamTrust {
  const insecure = env.TUNNEL_CLIENT_UPSTREAM_INSECURE === '1';
  const inCluster = inClusterApi(env);
  const inPod = inCluster !== null && isInClusterUpstream(inCluster, upstream);
  const podToken = inPod ? inCluster.tokenFile : undefined;
  const tokenFile = env.TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE || podToken;
  if (tokenFile) readToken(tokenFile); // fail at start, naming the file, rather than on the first request
  const dial = inPod && upstream !== inCluster.url ? inClusterAddress(inCluster) : undefined;
  const base = { insecure, tokenFile, ...(dial ? { dial } : {}) };
  const podCa = join(serviceAccountDir(env), 'ca.crt');
  const file = env.TUNNEL_CLIENT_UPSTREAM_CA || (existsSync(podCa) ? podCa : '');
  if (!file) return base;
  try {
    return { ...base, ca: readFileSync(file, 'utf8') };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new TunnelError('BAD_CONFIG', `TUNNEL_CLIENT_UPSTREAM_CA: cannot read '${file}' (${code})`);
  }
}
