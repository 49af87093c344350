/**
 * Limits on one agent-values document (platform values or a cluster's values): at most
 * MAX_VALUES_DEPTH nested maps and lists (the document itself is level 1) and at most MAX_VALUES_BYTES
 * bytes as compact JSON. The check walks the document with an explicit stack, never recursion, so a
 * document nested a million levels deep is measured without overflowing the call stack, and it stops
 * at the first limit crossed.
 */
import { TunnelError } from '../../../shared/errors.js';

export const MAX_VALUES_DEPTH = 32;
export const MAX_VALUES_BYTES = 64 * 1024;

export interface ValuesLimits {
  readonly maxDepth: number;
  readonly maxBytes: number;
}

export const VALUES_LIMITS: ValuesLimits = { maxDepth: MAX_VALUES_DEPTH, maxBytes: MAX_VALUES_BYTES };

export type ValuesCheck =
  | { readonly ok: true; readonly depth: number; readonly bytes: number }
  | { readonly ok: false; readonly code: 'VALUES_TOO_DEEP' | 'VALUES_TOO_LARGE'; readonly path: string };

/** A position in the document: its key (or list index) and the position it sits in. */
interface Place {
  readonly key: string | number;
  readonly parent: Place | null;
}

interface Frame {
  readonly value: unknown;
  readonly place: Place | null;
  readonly depth: number;
}

const PATH_KEY_MAX = 64;
const PATH_MAX = 400;

function pathOf(place: Place | null, root: string): string {
  const parts: string[] = [];
  for (let p = place; p; p = p.parent) {
    if (typeof p.key === 'number') parts.push(`[${p.key}]`);
    else {
      const k = p.key.length > PATH_KEY_MAX ? `${p.key.slice(0, PATH_KEY_MAX)}...` : p.key;
      parts.push(/^[A-Za-z_$][\w$-]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);
    }
  }
  const path = root + parts.reverse().join('');
  return path.length > PATH_MAX ? `${path.slice(0, PATH_MAX)}...` : path;
}

/** Bytes `v` adds as compact JSON, not counting its children (a container counts its brackets). */
function ownBytes(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(JSON.stringify(v));
  if (Array.isArray(v)) return 2 + Math.max(0, v.length - 1);
  if (typeof v === 'object' && v !== null) {
    const keys = Object.keys(v);
    let n = 2 + Math.max(0, keys.length - 1);
    for (const k of keys) n += Buffer.byteLength(JSON.stringify(k)) + 1;
    return n;
  }
  return Buffer.byteLength(JSON.stringify(v) ?? 'null');
}

function childrenOf(v: unknown): Array<[string | number, unknown]> {
  if (Array.isArray(v)) return v.map((x, i) => [i, x]);
  if (typeof v === 'object' && v !== null) return Object.entries(v);
  return [];
}

/**
 * Measures a parsed JSON document against the limits. `root` names the document in the path of a
 * failure (e.g. `values`); the path shows where the limit was crossed.
 */
export function checkValuesLimits(
  doc: unknown,
  root: string,
  limits: ValuesLimits = VALUES_LIMITS,
): ValuesCheck {
  const stack: Frame[] = [{ value: doc, place: null, depth: 1 }];
  let bytes = 0;
  let deepest = 0;
  while (stack.length > 0) {
    const { value, place, depth } = stack.pop()!;
    const container = typeof value === 'object' && value !== null;
    if (container && depth > limits.maxDepth) {
      return { ok: false, code: 'VALUES_TOO_DEEP', path: pathOf(place, root) };
    }
    if (container) deepest = Math.max(deepest, depth);
    bytes += ownBytes(value);
    if (bytes > limits.maxBytes) return { ok: false, code: 'VALUES_TOO_LARGE', path: pathOf(place, root) };
    const children = childrenOf(value);
    for (let i = children.length - 1; i >= 0; i--) {
      const [key, child] = children[i]!;
      stack.push({ value: child, place: { key, parent: place }, depth: depth + 1 });
    }
  }
  return { ok: true, depth: deepest, bytes };
}

/** The 400 for a document over a limit: names the limit and the path where it was crossed. */
export function valuesLimitError(
  check: ValuesCheck & { ok: false },
  limits: ValuesLimits = VALUES_LIMITS,
): TunnelError {
  return check.code === 'VALUES_TOO_DEEP'
    ? new TunnelError(
        'VALUES_TOO_DEEP',
        `${check.path}: values nest deeper than ${limits.maxDepth} levels of maps and lists`,
      )
    : new TunnelError(
        'VALUES_TOO_LARGE',
        `${check.path}: values are over ${limits.maxBytes} bytes as JSON (the limit is crossed here)`,
      );
}

/** Throws VALUES_TOO_DEEP or VALUES_TOO_LARGE unless `doc` is within the limits. */
export function assertValuesWithinLimits(
  doc: unknown,
  root: string,
  limits: ValuesLimits = VALUES_LIMITS,
): void {
  const check = checkValuesLimits(doc, root, limits);
  if (!check.ok) throw valuesLimitError(check, limits);
}
