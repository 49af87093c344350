/**
 * Agent values: platform-wide `agentValues` deep-merged with a cluster's annotation values. Documents
 * are checked against relay/control/model/values-limits.ts when written; one already stored over the limits (written
 * by an older build) is skipped when read: served as {} with a warning naming it, never a 500.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Values } from '../../../shared/kit/values/deep-merge.js';
import type { Store } from '../store/types.js';
import { checkValuesLimits, valuesLimitError } from './values-limits.js';

/** `doc` read from the store, or {} (with a warning naming `row`) when it is over the limits. */
export function withinLimitsOrSkipped(doc: Values, row: string, log: Logger): Values {
  const check = checkValuesLimits(doc, 'values');
  if (check.ok) return doc;
  const err = valuesLimitError(check);
  log.warn({ code: err.code, row }, `stored ${row} skipped (served as {}): ${err.message}`);
  return {};
}

/** Platform values as served: the stored document, or {} when it is over the limits. */
export async function readPlatformValues(ctx: { store: Store; log: Logger }): Promise<Values> {
  return withinLimitsOrSkipped(await ctx.store.getPlatformValues(), 'platform values', ctx.log);
}

/** A cluster's own values as served (null: no such cluster); {} when the row is over the limits. */
export async function readClusterValues(
  ctx: { store: Store; log: Logger },
  name: string,
): Promise<Values | null> {
  const own = await ctx.store.getClusterValues(name);
  return own === null ? null : withinLimitsOrSkipped(own, `values of cluster ${name}`, ctx.log);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
