/**
 * The `manifests` commands' flag values and defaults, apart from the Kubernetes object models (kubernetes-models),
 * so the command tree loads them at start and the models load only when manifests are printed.
 */
import { TunnelError } from '../../../shared/errors.js';
import { parseClusterName } from '../../../shared/kit/cli/parsers.js';
import { packageVersion } from '../../../shared/kit/cli/version.js';

export const DEFAULT_NAMESPACE = 'tunnel-system';
/** The relay's Service types (`--service-type`). */
export const SERVICE_TYPES = ['LoadBalancer', 'NodePort', 'ClusterIP'] as const;
/** The Secret holding the agent's join PSK. */
export const JOIN_SECRET = 'tunnel-client-join';

export function defaultImage(): string {
  return `wg-relay-tunnel:${packageVersion()}`;
}

export function parseNamespace(value: string): string {
  return parseClusterName(value, '--namespace');
}

/** An image reference: no spaces or control characters, at most 255 characters. */
export function parseImage(value: string): string {
  if (value.length > 0 && value.length <= 255 && /^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/.test(value)) return value;
  throw new TunnelError(
    'BAD_INPUT',
    `--image ${JSON.stringify(value.slice(0, 80))} is not an image reference (e.g. registry.example/wg-relay-tunnel:0.1.0)`,
  );
}

/** A `--*-cluster-role` value: a ClusterRole name, or `none` (null) to leave the binding out. */
export function parseClusterRoleFlag(flag: string): (value: string) => string | null {
  return (value) => {
    if (value === 'none') return null;
    if (value.length <= 253 && /^[A-Za-z0-9][A-Za-z0-9:._-]*$/.test(value)) return value;
    throw new TunnelError(
      'BAD_INPUT',
      `${flag} ${JSON.stringify(value.slice(0, 80))} is not a ClusterRole name (or none to leave the binding out)`,
    );
  };
}

const NO_PROXY = /^[A-Za-z0-9.*:/[\]_-]+(,[A-Za-z0-9.*:/[\]_-]+)*$/;

export function parseNoProxy(value: string): string {
  if (value.length <= 4096 && NO_PROXY.test(value)) return value;
  throw new TunnelError(
    'BAD_INPUT',
    `--no-proxy ${JSON.stringify(value.slice(0, 80))} is not a comma-separated list of hosts, domains or CIDRs`,
  );
}
