/**
 * The install-link row both stores read (a link joined with its PSK) and what it means, so SQLite and
 * PostgreSQL decide alike; each store runs the statements in its own transaction and dialect.
 */
import type { TakeInstallResult } from './types.js';

export interface LinkRow {
  psk_id: string;
  sealed: string | null;
  used_at: number | null;
  cluster: string;
  expires_at: number;
  psk_used_at: number | null;
  revoked_at: number | null;
}

/** SELECT list and join of a link with its PSK; the caller adds `WHERE l.hash = <placeholder>`. */
export const LINK_SELECT = `SELECT l.psk_id, l.sealed, l.used_at, p.cluster, p.expires_at, p.used_at AS psk_used_at, p.revoked_at
       FROM install_links l JOIN psks p ON p.id = l.psk_id`;

/** Why the link cannot be taken at `now` (unknown, used, expired), or null when it can. */
export function linkRefusal(row: LinkRow | undefined, now: number): TakeInstallResult | null {
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.used_at !== null || row.sealed === null) return { ok: false, reason: 'used', cluster: row.cluster };
  if (row.expires_at <= now || row.psk_used_at !== null || row.revoked_at !== null) {
    return { ok: false, reason: 'expired', cluster: row.cluster };
  }
  return null;
}

/** The result once the guarded update took the link (`changed` rows), or 'used' when another took it first. */
export function takenLink(row: LinkRow, changed: number): TakeInstallResult {
  if (changed !== 1 || row.sealed === null) return { ok: false, reason: 'used', cluster: row.cluster };
  return { ok: true, cluster: row.cluster, pskId: row.psk_id, sealed: row.sealed, expiresAt: row.expires_at };
}
