/**
 * Upstream TLS trust of the agent's dialer (for `@upstream` with an https URL): the PEM file named by
 * TUNNEL_CLIENT_UPSTREAM_CA, else the in-cluster service-account CA when that file exists, else the
 * system roots. TUNNEL_CLIENT_UPSTREAM_INSECURE=1 turns verification off (tests, never production).
 * TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE (opt-in): path-proxy requests carry that token (token-injector.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { TunnelError } from '../../shared/errors.js';
import { readToken } from './token-injector.js';

export const IN_CLUSTER_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

export interface UpstreamTrust {
  ca?: string;
  insecure: boolean;
  /** TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: opt-in credential for path-proxy requests (token-injector.ts). */
  tokenFile?: string;
}

export function upstreamTrust(env: NodeJS.ProcessEnv): UpstreamTrust {
  const insecure = env.TUNNEL_CLIENT_UPSTREAM_INSECURE === '1';
  const tokenFile = env.TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE || undefined;
  if (tokenFile) readToken(tokenFile); // fail at start, naming the file, rather than on the first request
  const base = { insecure, ...(tokenFile ? { tokenFile } : {}) };
  const file = env.TUNNEL_CLIENT_UPSTREAM_CA || (existsSync(IN_CLUSTER_CA) ? IN_CLUSTER_CA : '');
  if (!file) return base;
  try {
    return { ...base, ca: readFileSync(file, 'utf8') };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new TunnelError('BAD_CONFIG', `TUNNEL_CLIENT_UPSTREAM_CA: cannot read '${file}' (${code})`);
  }
}
