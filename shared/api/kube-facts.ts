/**
 * The Kubernetes facts an agent reports about its cluster, as two claims it collects from its API server
 * (tunnel-client/dialer/cluster-facts.ts): the version (`GET /version`'s gitVersion) and the node count. Claims are
 * the agent's word, so both sides read them through the same checks: a value that does not look like a version or
 * a small count is not shown as one (the claim itself stays, escaped, like any other claim).
 */
import { MAX_CLAIM_VALUE, MAX_CLAIMS } from './claim-limits.js';

export const KUBERNETES_VERSION_CLAIM = 'kubernetes.version';
export const NODE_COUNT_CLAIM = 'kubernetes.nodes';

/** v1.30.2, v1.29.4+k3s1, v1.28.3-gke.1203001: at most 64 characters. */
const VERSION = /^v?\d{1,4}\.\d{1,4}(\.\d{1,4})?([-+][0-9A-Za-z.+-]{1,48})?$/;
export const MAX_VERSION_LENGTH = 64;
/** More nodes than any cluster has (Kubernetes supports 5,000). */
export const MAX_NODE_COUNT = 1_000_000;

/** The version if `value` reads as a Kubernetes version, else null. */
export function kubernetesVersionOf(value: string | undefined): string | null {
  if (value === undefined || value.length > MAX_VERSION_LENGTH || !VERSION.test(value)) return null;
  return value;
}

/** The count if `value` is a whole number 0..MAX_NODE_COUNT written plainly, else null. */
export function nodeCountOf(value: string | undefined): number | null {
  if (value === undefined || !/^(0|[1-9]\d{0,6})$/.test(value)) return null;
  const n = Number(value);
  return n <= MAX_NODE_COUNT ? n : null;
}

/** The two facts of a cluster's claims, null where absent or not well formed. */
export function kubeFactsOf(claims: Readonly<Record<string, string>>): {
  kubernetesVersion: string | null;
  nodeCount: number | null;
} {
  return {
    kubernetesVersion: kubernetesVersionOf(claims[KUBERNETES_VERSION_CLAIM]),
    nodeCount: nodeCountOf(claims[NODE_COUNT_CLAIM]),
  };
}

/**
 * The claims a lease carries: the `--claim` ones with the collected facts over them (the agent's API server knows
 * its version better than a flag), never more than MAX_CLAIMS (a fact that would exceed it is left out) and no value
 * longer than MAX_CLAIM_VALUE.
 */
export function withKubeFacts(
  claims: Readonly<Record<string, string>>,
  facts: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = { ...claims };
  for (const [key, value] of Object.entries(facts)) {
    if (key !== KUBERNETES_VERSION_CLAIM && key !== NODE_COUNT_CLAIM) continue;
    if (value.length === 0 || value.length > MAX_CLAIM_VALUE) continue;
    if (!(key in out) && Object.keys(out).length >= MAX_CLAIMS) continue;
    out[key] = value;
  }
  return out;
}
