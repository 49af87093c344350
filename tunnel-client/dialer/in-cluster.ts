/**
 * The Kubernetes API server of the pod the agent runs in, when it runs in one: KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT set (the kubelet sets both in every container) and the pod's service-account CA and token
 * present (`/var/run/secrets/kubernetes.io/serviceaccount`, or TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR). `join` without
 * `--upstream` makes it the default upstream; the dialer then trusts that CA and sends that token
 * (upstream-trust.ts). An upstream written as the API server's service name (`https://kubernetes.default.svc`,
 * port 443) is the same server: the agent connects to KUBERNETES_SERVICE_HOST/PORT and verifies the name.
 */
import { existsSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Where the pod's service-account files are: TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR, else the kubelet's path. */
export function serviceAccountDir(env: NodeJS.ProcessEnv): string {
  return env.TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR || SERVICE_ACCOUNT_DIR;
}

export interface InClusterApi {
  /** https://HOST:PORT of the API server, from KUBERNETES_SERVICE_HOST/PORT. */
  readonly url: string;
  readonly caFile: string;
  readonly tokenFile: string;
}

export function inClusterApi(env: NodeJS.ProcessEnv): InClusterApi | null {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) return null;
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) return null;
  const dir = serviceAccountDir(env);
  const caFile = join(dir, 'ca.crt');
  const tokenFile = join(dir, 'token');
  if (!existsSync(caFile) || !existsSync(tokenFile)) return null;
  const url = `https://${isIPv6(host) ? `[${host}]` : host}:${Number(port)}`;
  return { url, caFile, tokenFile };
}

/** The names the API server's service goes by inside a cluster (its serving certificate holds them). */
const SERVICE_NAMES = new Set([
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
]);

/** Whether `upstream` is the pod's API server: its service URL, or `https://kubernetes.default.svc[:443]`. */
export function isInClusterUpstream(api: InClusterApi, upstream: string | null): boolean {
  if (upstream === null) return false;
  if (upstream === api.url) return true;
  let u: URL;
  try {
    u = new URL(upstream);
  } catch {
    return false;
  }
  const port = u.port === '' ? 443 : Number(u.port);
  return u.protocol === 'https:' && port === 443 && SERVICE_NAMES.has(u.hostname.toLowerCase());
}

/** host and port of the API server's service address (KUBERNETES_SERVICE_HOST/PORT). */
export function inClusterAddress(api: InClusterApi): { host: string; port: number } {
  const u = new URL(api.url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}
