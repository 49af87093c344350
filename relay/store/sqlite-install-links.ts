/** Bootstrap PSKs with their install links in the SQLite store (called inside SqliteStore's transactions). */
import type Database from 'better-sqlite3';
import type { NewSecret, TakeInstallResult } from './types.js';

export function insertPsk(db: Database.Database, cluster: string, psk: NewSecret): void {
  db.prepare('INSERT INTO psks (id, cluster, hash, expires_at) VALUES (?, ?, ?, ?)').run(
    psk.id,
    cluster,
    psk.hash,
    psk.expiresAt,
  );
  if (!psk.install) return;
  db.prepare('INSERT INTO install_links (hash, psk_id, sealed) VALUES (?, ?, ?)').run(
    psk.install.hash,
    psk.id,
    psk.install.sealed,
  );
}

interface LinkRow {
  psk_id: string;
  sealed: string | null;
  used_at: number | null;
  cluster: string;
  expires_at: number;
  psk_used_at: number | null;
  revoked_at: number | null;
}

/** Reads and, when good, consumes the link in the caller's transaction. */
export function takeInstallLinkInTx(db: Database.Database, hash: string, now: number): TakeInstallResult {
  const row = db
    .prepare<[string], LinkRow>(
      `SELECT l.psk_id, l.sealed, l.used_at, p.cluster, p.expires_at, p.used_at AS psk_used_at, p.revoked_at
       FROM install_links l JOIN psks p ON p.id = l.psk_id WHERE l.hash = ?`,
    )
    .get(hash);
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.used_at !== null || row.sealed === null) return { ok: false, reason: 'used', cluster: row.cluster };
  if (row.expires_at <= now || row.psk_used_at !== null || row.revoked_at !== null) {
    return { ok: false, reason: 'expired', cluster: row.cluster };
  }
  const taken = db
    .prepare('UPDATE install_links SET used_at = ?, sealed = NULL WHERE hash = ? AND used_at IS NULL')
    .run(now, hash);
  if (taken.changes !== 1) return { ok: false, reason: 'used', cluster: row.cluster };
  return { ok: true, cluster: row.cluster, pskId: row.psk_id, sealed: row.sealed, expiresAt: row.expires_at };
}
