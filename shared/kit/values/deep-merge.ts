/**
 * Agent values layering: maps merge key by key, recursively; everything else (scalars, arrays, null)
 * from the later layer replaces the earlier one. Keys such as `__proto__` are stored as plain own
 * properties, so values from the relay or a file can never reach an object prototype.
 */
import { TunnelError } from '../../errors.js';

export type Values = { [key: string]: unknown };

/** Deepest map nesting accepted in values. */
export const MAX_VALUES_DEPTH = 64;

export function isPlainMap(v: unknown): v is Values {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function setOwn(target: Values, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function merge(base: Values, over: Values, depth: number): Values {
  if (depth > MAX_VALUES_DEPTH) {
    throw new TunnelError('BAD_INPUT', `values nest deeper than ${MAX_VALUES_DEPTH} maps`);
  }
  const out: Values = {};
  for (const key of Object.keys(base)) setOwn(out, key, base[key]);
  for (const key of Object.keys(over)) {
    const a = Object.hasOwn(out, key) ? out[key] : undefined;
    const b = over[key];
    setOwn(out, key, isPlainMap(a) && isPlainMap(b) ? merge(a, b, depth + 1) : b);
  }
  return out;
}

/** `base` with `over` layered on top; neither input is modified. */
export function deepMerge(base: Values, over: Values): Values {
  return merge(base, over, 0);
}

/** Layers in order: the first is the bottom, each later one wins. */
export function layerValues(layers: readonly Values[]): Values {
  let out: Values = {};
  for (const l of layers) out = deepMerge(out, l);
  return out;
}
