/** Agent values: platform-wide `agentValues` deep-merged with a cluster's annotation values. */
import { createHash } from 'node:crypto';
import { isPlainMap, deepMerge as mergeMaps } from '../shared/values/deep-merge.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Maps merge key by key (recursively); anything else (scalars, arrays) from `over` wins. The same
 * merge the agent uses to layer its --values files (shared/values/deep-merge.ts).
 */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (!isPlainMap(base) || !isPlainMap(over)) return over;
  return mergeMaps(base, over);
}

/** Canonical JSON (sorted keys) so the version does not depend on insertion order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isPlainObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function valuesVersion(merged: unknown): string {
  return createHash('sha256').update(canonical(merged)).digest('hex').slice(0, 16);
}
