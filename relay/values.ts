/** Agent values: platform-wide `agentValues` deep-merged with a cluster's annotation values. */
import { createHash } from 'node:crypto';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Maps merge key by key (recursively); anything else (scalars, arrays) from `over` wins. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (k === '__proto__') continue;
    out[k] = deepMerge(base[k], v);
  }
  return out;
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
