/**
 * A kubeconfig that reaches a cluster through the relay's CONNECT proxy (`proxy-url`), so TLS runs end
 * to end from kubectl to the kube-apiserver. The route GET /api/v1/clusters/:name/kubeconfig serves the
 * path-proxy form; this is the CONNECT form (docs/OPERATIONS.md explains when to use which).
 *
 * How Go's HTTP client (kubectl) uses it: it opens TLS to the proxy URL, sends
 * `CONNECT <name>.clusters.local:<port>` with `Proxy-Authorization: Basic base64(key:<access key>)` from
 * the URL's user info, then TLS to the upstream through the tunnel. Both TLS sessions use the same
 * trust (certificate-authority-data), so it carries the relay's CA and the upstream's CA, and the
 * upstream's certificate must name `<name>.clusters.local` (Go checks the proxy against
 * tls-server-name too, so that field cannot be used here).
 */
import { singleContextKubeconfig } from '../../control/model/kubeconfig-document.js';

export interface ConnectKubeconfigInput {
  cluster: string;
  /** Relay URL kubectl connects to (https://host:port). */
  relayUrl: string;
  relayCaPem: string;
  accessKey: string;
  /** The upstream port the agent maps to its default upstream (e.g. 6443). */
  port: number;
  /** CA of the upstream's certificate (the cluster's CA). */
  upstreamCaPem: string;
  /**
   * The kubeconfig user: credentials for the upstream itself (they travel inside the end-to-end TLS;
   * the relay never sees them). Without any, kubectl asks for a username on stdin.
   */
  user?: Record<string, unknown>;
}

export function connectKubeconfig(i: ConnectKubeconfigInput): Record<string, unknown> {
  const proxy = new URL(i.relayUrl);
  proxy.username = 'key';
  proxy.password = i.accessKey;
  const name = `${i.cluster}-via-connect`;
  const ca = `${i.relayCaPem.trimEnd()}\n${i.upstreamCaPem.trimEnd()}\n`;
  return singleContextKubeconfig(
    name,
    {
      server: `https://${i.cluster}.clusters.local:${i.port}`,
      'proxy-url': proxy.toString().replace(/\/$/, ''),
      'certificate-authority-data': Buffer.from(ca).toString('base64'),
    },
    i.user ?? {},
  );
}
