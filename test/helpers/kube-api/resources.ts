/** The test API server's objects: discovery documents, namespaces and a pod store that feeds watches. */

export const VERSION = {
  major: '1',
  minor: '30',
  gitVersion: 'v1.30.0+test-apiserver',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.22.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export const API_VERSIONS = {
  kind: 'APIVersions',
  versions: ['v1'],
  serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }],
};

export const API_GROUPS = { kind: 'APIGroupList', apiVersion: 'v1', groups: [] };

const READ_VERBS = ['get', 'list', 'watch'];

export const CORE_RESOURCES = {
  kind: 'APIResourceList',
  groupVersion: 'v1',
  resources: [
    {
      name: 'namespaces',
      singularName: 'namespace',
      namespaced: false,
      kind: 'Namespace',
      verbs: READ_VERBS,
      shortNames: ['ns'],
    },
    {
      name: 'pods',
      singularName: 'pod',
      namespaced: true,
      kind: 'Pod',
      verbs: [...READ_VERBS, 'delete'],
      shortNames: ['po'],
    },
    {
      name: 'pods/exec',
      singularName: '',
      namespaced: true,
      kind: 'PodExecOptions',
      verbs: ['create', 'get'],
    },
    {
      name: 'pods/attach',
      singularName: '',
      namespaced: true,
      kind: 'PodAttachOptions',
      verbs: ['create', 'get'],
    },
    {
      name: 'pods/portforward',
      singularName: '',
      namespaced: true,
      kind: 'PodPortForwardOptions',
      verbs: ['create', 'get'],
    },
  ],
};

function namespace(name: string) {
  return {
    metadata: { name, uid: `ns-${name}`, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
    status: { phase: 'Active' },
  };
}

export const NAMESPACES = {
  kind: 'NamespaceList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '1' },
  items: [namespace('default'), namespace('kube-system')],
};

/** A node list as kube-apiserver answers `?limit=N`: the first N, `remainingItemCount` and `continue` past them. */
export function nodeList(names: readonly string[], limit: number | null) {
  const shown = limit === null ? names : names.slice(0, limit);
  const remaining = names.length - shown.length;
  return {
    kind: 'NodeList',
    apiVersion: 'v1',
    metadata: {
      resourceVersion: '1',
      ...(remaining > 0 ? { continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ', remainingItemCount: remaining } : {}),
    },
    items: shown.map((name) => ({ metadata: { name, uid: `node-${name}`, resourceVersion: '1' } })),
  };
}

export interface Pod {
  kind: 'Pod';
  apiVersion: 'v1';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
  };
  spec: { containers: Array<{ name: string; image: string }> };
  status: { phase: 'Running' };
}

export type WatchEvent = { type: 'ADDED' | 'DELETED'; object: Pod };

/** Pods of namespace `default`, a resource version counter and the watches to tell about changes. */
export class PodStore {
  readonly #pods = new Map<string, Pod>();
  readonly #watchers = new Set<(e: WatchEvent) => void>();
  #version = 10;

  get resourceVersion(): string {
    return String(this.#version);
  }

  add(name: string): Pod {
    this.#version++;
    const pod: Pod = {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: {
        name,
        namespace: 'default',
        uid: `pod-${name}`,
        resourceVersion: String(this.#version),
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      spec: { containers: [{ name: 'app', image: 'busybox' }] },
      status: { phase: 'Running' },
    };
    this.#pods.set(name, pod);
    for (const w of this.#watchers) w({ type: 'ADDED', object: pod });
    return pod;
  }

  get(name: string): Pod | undefined {
    return this.#pods.get(name);
  }

  delete(name: string): Pod | undefined {
    const pod = this.#pods.get(name);
    if (!pod) return undefined;
    this.#version++;
    this.#pods.delete(name);
    for (const w of this.#watchers) w({ type: 'DELETED', object: pod });
    return pod;
  }

  list() {
    return {
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: this.resourceVersion },
      items: [...this.#pods.values()],
    };
  }

  /** Calls `fn` for each later change; returns the function that stops it. */
  watch(fn: (e: WatchEvent) => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  get watching(): number {
    return this.#watchers.size;
  }
}
