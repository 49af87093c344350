/** The kubeconfig documents the relay hands out: one cluster, one user and one context, all of one name. */

/** A kubeconfig whose cluster, user and context are all called `name`, with that context current. */
export function singleContextKubeconfig(
  name: string,
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  };
}
