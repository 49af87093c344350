/**
 * Paging of the list routes, as the Kubernetes API pages: `?limit=N` (each list has a default and a maximum; a
 * larger N is served as the maximum) and `?continue=TOKEN` from the previous page's `continue`, present while more
 * remain. The token is opaque to clients: base64url of the list's name and the last item's key in the list's
 * order, so the next page starts right after it (a keyset in SQL: relay/control/store/page-query.ts). It grants nothing:
 * the caller's role and group still decide what each page holds. A token that does not decode, or that another
 * list issued, is 400 BAD_INPUT naming `continue`.
 */
import { TunnelError } from '../../../shared/errors.js';

export interface PageLimits {
  default: number;
  max: number;
}

export const CLUSTER_PAGE: PageLimits = { default: 100, max: 500 };
export const TOKEN_PAGE: PageLimits = { default: 100, max: 1000 };
export const AUDIT_PAGE: PageLimits = { default: 100, max: 1000 };

/** Tokens longer than this are refused before decoding (a cluster name or key id fits many times over). */
export const CONTINUE_MAX = 512;

/** The lists that issue tokens, and the key each one's token carries. */
export interface ListKeys {
  clusters: string;
  tokens: [number, string];
  audit: number;
}

/** The page size for `text` (the query's `limit`, digits by its schema). */
export function pageLimit(text: string | undefined, limits: PageLimits): number {
  if (text === undefined) return limits.default;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new TunnelError(
      'BAD_INPUT',
      `limit ${JSON.stringify(text)} is not valid: expected 1-${limits.max}`,
    );
  }
  return Math.min(n, limits.max);
}

export function encodeContinue<L extends keyof ListKeys>(list: L, key: ListKeys[L]): string {
  return Buffer.from(JSON.stringify({ l: list, k: key })).toString('base64url');
}

function keyIsValid<L extends keyof ListKeys>(list: L, key: unknown): key is ListKeys[L] {
  switch (list) {
    case 'clusters':
      return typeof key === 'string' && key.length > 0 && key.length <= 253;
    case 'audit':
      return Number.isSafeInteger(key) && (key as number) > 0;
    case 'tokens':
      return (
        Array.isArray(key) &&
        key.length === 2 &&
        Number.isSafeInteger(key[0]) &&
        typeof key[1] === 'string' &&
        key[1].length <= 64
      );
    default:
      return false;
  }
}

function parsed(text: string): unknown {
  if (text.length > CONTINUE_MAX || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  try {
    return JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

/** The key to start after, from the query's `continue` (null when absent); BAD_INPUT when it is not this list's. */
export function decodeContinue<L extends keyof ListKeys>(
  list: L,
  text: string | undefined,
): ListKeys[L] | null {
  if (text === undefined) return null;
  const body = parsed(text);
  const fields = typeof body === 'object' && body !== null ? (body as { l?: unknown; k?: unknown }) : {};
  if (fields.l !== list || !keyIsValid(list, fields.k)) {
    throw new TunnelError(
      'BAD_INPUT',
      `continue: not a token this list (${list}) issued; pass the \`continue\` of its previous page, or leave it ` +
        'out to start from the first page',
    );
  }
  return fields.k;
}
