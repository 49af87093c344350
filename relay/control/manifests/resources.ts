/**
 * The seeds' resource flags (clusteradm join): `--resource-qos-class Default|BestEffort|ResourceRequirement`,
 * `--resource-limits cpu=800m,memory=800Mi`, `--resource-requests cpu=400m,memory=400Mi`.
 *   Default              the manifest's own requests and limits
 *   BestEffort           no requests and no limits (the pod is BestEffort)
 *   ResourceRequirement  exactly the given limits and requests (at least one of the two)
 * Limits or requests with another class, an unknown resource name, a repeated name, a bad quantity or a
 * request above its limit are BAD_INPUT naming the flag and the value.
 */

import { TunnelError } from '../../../shared/errors.js';
import { shown } from '../../../shared/kit/cli/parsers.js';
import { parseQuantity, type Quantity } from './quantity.js';

export const QOS_CLASSES = ['Default', 'BestEffort', 'ResourceRequirement'] as const;
export type QosClass = (typeof QOS_CLASSES)[number];

export const RESOURCE_NAMES = ['cpu', 'memory', 'ephemeral-storage'] as const;
type ResourceName = (typeof RESOURCE_NAMES)[number];

export type ResourceList = Partial<Record<ResourceName, string>>;

export interface Resources {
  readonly requests?: ResourceList;
  readonly limits?: ResourceList;
}

export interface ResourceFlags {
  resourceQosClass?: string;
  resourceLimits?: string;
  resourceRequests?: string;
}

function isResourceName(name: string): name is ResourceName {
  return (RESOURCE_NAMES as readonly string[]).includes(name);
}

export function parseQosClass(value: string): QosClass {
  const found = QOS_CLASSES.find((c) => c === value);
  if (found) return found;
  throw new TunnelError(
    'BAD_INPUT',
    `--resource-qos-class ${shown(value)} is not one of ${QOS_CLASSES.join(', ')}`,
  );
}

/** `cpu=800m,memory=800Mi` into its quantities, keyed by resource name. */
export function parseResourceList(value: string, flag: string): Map<ResourceName, Quantity> {
  const out = new Map<ResourceName, Quantity>();
  for (const pair of value.split(',')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !isResourceName(name)) {
      throw new TunnelError(
        'BAD_INPUT',
        `${flag} entry ${shown(pair)} is not NAME=QUANTITY with NAME one of ${RESOURCE_NAMES.join(', ')} (e.g. cpu=800m,memory=800Mi)`,
      );
    }
    if (out.has(name)) throw new TunnelError('BAD_INPUT', `${flag} names ${name} twice`);
    out.set(name, parseQuantity(pair.slice(eq + 1), `${flag} ${name}`));
  }
  return out;
}

function toList(m: Map<ResourceName, Quantity>): ResourceList {
  const list: ResourceList = {};
  for (const [name, q] of m) list[name] = q.text;
  return list;
}

/** What the flags ask for: `defaults` for Default, nothing for BestEffort, the given lists otherwise. */
export function resolveResources(flags: ResourceFlags, defaults: Resources): Resources {
  const qos = parseQosClass(flags.resourceQosClass ?? 'Default');
  const given = flags.resourceLimits !== undefined || flags.resourceRequests !== undefined;
  if (qos !== 'ResourceRequirement') {
    if (given) {
      throw new TunnelError(
        'BAD_INPUT',
        `--resource-limits and --resource-requests need --resource-qos-class ResourceRequirement (got ${qos})`,
      );
    }
    return qos === 'Default' ? defaults : {};
  }
  if (!given) {
    throw new TunnelError(
      'BAD_INPUT',
      '--resource-qos-class ResourceRequirement needs --resource-limits, --resource-requests or both',
    );
  }
  const limits =
    flags.resourceLimits === undefined
      ? undefined
      : parseResourceList(flags.resourceLimits, '--resource-limits');
  const requests =
    flags.resourceRequests === undefined
      ? undefined
      : parseResourceList(flags.resourceRequests, '--resource-requests');
  for (const [name, req] of requests ?? []) {
    const lim = limits?.get(name);
    if (lim && req.value > lim.value) {
      throw new TunnelError(
        'BAD_INPUT',
        `--resource-requests ${name}=${req.text} is above --resource-limits ${name}=${lim.text}`,
      );
    }
  }
  return {
    requests: requests ? toList(requests) : undefined,
    limits: limits ? toList(limits) : undefined,
  };
}
