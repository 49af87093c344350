/**
 * The access-key caps and the retention of ended keys, in both stores. A key is live while it is neither revoked
 * nor expired; only live keys count against `maxAccessKeys`, and a kubeconfig key (one that names the key that
 * minted it) also against its minting key's `maxLiveKeysPerMinter`. A key that ended (revoked or expired) stays
 * listed for ENDED_KEY_RETENTION_MS after it ended, then its row is deleted; at most `maxEndedAccessKeys` ended rows
 * are kept, the ones that ended first going first past that. Both run in the transaction of every key creation (the
 * only write that adds rows), so the table holds at most `maxAccessKeys` + `maxEndedAccessKeys` rows plus the keys
 * minted exempt from the cap (the offline recovery).
 */
import { TunnelError } from '../../../shared/errors.js';
import type { AccessKeyRecord, StoreLimits } from './types.js';

/** How long a revoked or expired key stays in the store (and in GET /api/v1/tokens) after it ended. */
export const ENDED_KEY_RETENTION_MS = 7 * 86_400_000;

/** SQLite's placeholder for value `i` (named, so a value can appear twice); its values: sqliteArgs. */
export const sqliteParam = (i: number): string => `@p${i}`;

/** The values of a statement written with sqliteParam, in order (value 1 first). */
export function sqliteArgs(...values: unknown[]): Record<string, unknown> {
  return Object.fromEntries(values.map((v, i) => [`p${i + 1}`, v]));
}

/** When a key stopped working: its revocation or its expiry, whichever came first (SQL, both dialects). */
const ENDED_AT = `CASE WHEN revoked_at IS NOT NULL AND (expires_at IS NULL OR revoked_at < expires_at)
  THEN revoked_at ELSE expires_at END`;

/** Deletes the keys that ended at or before `p(1)` (revoked then, or expired then). */
export function pruneEndedKeysSql(p: (i: number) => string): string {
  return `DELETE FROM access_keys WHERE revoked_at <= ${p(1)} OR expires_at <= ${p(1)}`;
}

/** The keys live at `p(1)`, and the live keys minted by key `p(2)`. */
export function liveKeyCountsSql(p: (i: number) => string): string {
  return `SELECT COUNT(*) AS "live", COUNT(CASE WHEN minted_by = ${p(2)} THEN 1 END) AS "byMinter",
      (SELECT COUNT(*) FROM access_keys) AS "rows"
    FROM access_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${p(1)})`;
}

/** Deletes the `p(2)` keys that ended first among those ended at `p(1)`. */
export function pruneOldestEndedSql(p: (i: number) => string): string {
  return `DELETE FROM access_keys WHERE id IN (
    SELECT id FROM access_keys WHERE revoked_at IS NOT NULL OR expires_at <= ${p(1)}
    ORDER BY ${ENDED_AT}, id LIMIT ${p(2)})`;
}

/** The live keys scoped to cluster `p(1)` (roles `cluster-proxy:NAME`, `cluster-proxy-read:NAME`) at `p(2)`. */
export function revokeClusterKeysSql(p: (i: number) => string): string {
  return `UPDATE access_keys SET revoked_at = ${p(2)}
    WHERE role IN ('cluster-proxy:' || ${p(1)}, 'cluster-proxy-read:' || ${p(1)})
      AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${p(2)})
    RETURNING id`;
}

export interface LiveKeyCounts {
  live: number;
  byMinter: number;
  /** Every row, live and ended. */
  rows: number;
}

/** The ended rows over the cap of ended rows: how many of the oldest to delete (0: none). */
export function endedRowsOver(
  counts: LiveKeyCounts,
  limits: Pick<StoreLimits, 'maxEndedAccessKeys'>,
): number {
  return Math.max(0, counts.rows - counts.live - limits.maxEndedAccessKeys);
}

/** LIMIT_EXCEEDED when `key` would pass a cap, naming it (ids only, never a secret). */
export function checkKeyCaps(
  key: AccessKeyRecord,
  counts: LiveKeyCounts,
  limits: Pick<StoreLimits, 'maxAccessKeys' | 'maxLiveKeysPerMinter'>,
): void {
  if (counts.live >= limits.maxAccessKeys) {
    throw new TunnelError(
      'LIMIT_EXCEEDED',
      `access keys: the relay already holds ${limits.maxAccessKeys} live (not revoked, not expired) keys; ` +
        'revoke some (tunnel-relay token revoke ID) or wait for them to expire',
    );
  }
  if (key.minted?.by != null && counts.byMinter >= limits.maxLiveKeysPerMinter) {
    throw new TunnelError(
      'LIMIT_EXCEEDED',
      `kubeconfig keys: access key ${key.minted.by} already holds ${limits.maxLiveKeysPerMinter} live ones it ` +
        'minted; revoke some (tunnel-relay token revoke ID), mint them with a shorter --ttl, or wait for them to expire',
    );
  }
}
