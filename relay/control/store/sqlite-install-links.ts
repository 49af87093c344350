/** Bootstrap PSKs with their install links in the SQLite store (called inside SqliteStore's transactions). */
import type Database from 'better-sqlite3';
import { LINK_SELECT, type LinkRow, linkRefusal, takenLink } from './install-link-rows.js';
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

/** Reads and, when good, consumes the link in the caller's transaction. */
export function takeInstallLinkInTx(db: Database.Database, hash: string, now: number): TakeInstallResult {
  const row = db.prepare<[string], LinkRow>(`${LINK_SELECT} WHERE l.hash = ?`).get(hash);
  const refusal = linkRefusal(row, now);
  if (refusal || !row) return refusal ?? { ok: false, reason: 'unknown' };
  const taken = db
    .prepare('UPDATE install_links SET used_at = ?, sealed = NULL WHERE hash = ? AND used_at IS NULL')
    .run(now, hash);
  return takenLink(row, taken.changes);
}
