/**
 * Checks YAML text the way the API server's schema check would: every document is parsed on its own,
 * looked up by apiVersion/kind, and validated against the Kubernetes OpenAPI schema of that kind
 * (kubernetes-models' generated validators). A kind not listed here fails, so a new object kind needs
 * its schema added.
 */
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { parseAllDocuments } from 'yaml';

type Validator = (doc: Record<string, unknown>) => void;

const SCHEMAS: Readonly<Record<string, Validator>> = {
  'v1/Namespace': (d) => new Namespace(d).validate(),
  'v1/ServiceAccount': (d) => new ServiceAccount(d).validate(),
  'v1/ConfigMap': (d) => new ConfigMap(d).validate(),
  'v1/Secret': (d) => new Secret(d).validate(),
  'v1/PersistentVolumeClaim': (d) => new PersistentVolumeClaim(d).validate(),
  'v1/Service': (d) => new Service(d).validate(),
  'apps/v1/Deployment': (d) => new Deployment(d).validate(),
  'apps/v1/StatefulSet': (d) => new StatefulSet(d).validate(),
  'policy/v1/PodDisruptionBudget': (d) => new PodDisruptionBudget(d).validate(),
  'networking.k8s.io/v1/NetworkPolicy': (d) => new NetworkPolicy(d).validate(),
  'rbac.authorization.k8s.io/v1/ClusterRole': (d) => new ClusterRole(d).validate(),
  // roleRef is required by the type: an empty model takes the document's fields, so a missing one still fails.
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (d) =>
    Object.assign(new ClusterRoleBinding(), d).validate(),
};

export interface K8sDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

function isDoc(v: unknown): v is K8sDoc {
  return typeof v === 'object' && v !== null && 'apiVersion' in v && 'kind' in v && 'metadata' in v;
}

/** Parses and schema-checks every document; throws naming the first bad one. */
export function validateYamlStream(text: string): K8sDoc[] {
  const docs: K8sDoc[] = [];
  for (const d of parseAllDocuments(text)) {
    if (d.errors.length > 0) throw new Error(`YAML error: ${d.errors[0]?.message}`);
    const value: unknown = d.toJS();
    if (value === null) continue;
    if (!isDoc(value))
      throw new Error(`a document without apiVersion/kind/metadata: ${JSON.stringify(value)}`);
    const check = SCHEMAS[`${value.apiVersion}/${value.kind}`];
    if (!check) throw new Error(`no schema for ${value.apiVersion}/${value.kind}`);
    check(value);
    docs.push(value);
  }
  return docs;
}
