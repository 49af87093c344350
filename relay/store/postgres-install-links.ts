/** Bootstrap PSKs with their install links in the PostgreSQL store (inside PostgresStore's transactions). */
import type { Tx } from './postgres-tx.js';
import type { NewSecret, TakeInstallResult } from './types.js';

export async function insertPskPg(tx: Tx, cluster: string, psk: NewSecret): Promise<void> {
  await tx.run('INSERT INTO psks (id, cluster, hash, expires_at) VALUES ($1, $2, $3, $4)', [
    psk.id,
    cluster,
    psk.hash,
    psk.expiresAt,
  ]);
  if (!psk.install) return;
  await tx.run('INSERT INTO install_links (hash, psk_id, sealed) VALUES ($1, $2, $3)', [
    psk.install.hash,
    psk.id,
    psk.install.sealed,
  ]);
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

/**
 * Reads and, when good, consumes the link. The transaction is SERIALIZABLE and the update is guarded by
 * `used_at IS NULL`, so of two replicas taking the same link at once one gets it and the other, run
 * again, sees it used.
 */
export async function takeInstallLinkPg(tx: Tx, hash: string, now: number): Promise<TakeInstallResult> {
  const row = await tx.one<LinkRow>(
    `SELECT l.psk_id, l.sealed, l.used_at, p.cluster, p.expires_at, p.used_at AS psk_used_at, p.revoked_at
     FROM install_links l JOIN psks p ON p.id = l.psk_id WHERE l.hash = $1`,
    [hash],
  );
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.used_at !== null || row.sealed === null) return { ok: false, reason: 'used', cluster: row.cluster };
  if (row.expires_at <= now || row.psk_used_at !== null || row.revoked_at !== null) {
    return { ok: false, reason: 'expired', cluster: row.cluster };
  }
  const changed = await tx.run(
    'UPDATE install_links SET used_at = $1, sealed = NULL WHERE hash = $2 AND used_at IS NULL',
    [now, hash],
  );
  if (changed !== 1) return { ok: false, reason: 'used', cluster: row.cluster };
  return { ok: true, cluster: row.cluster, pskId: row.psk_id, sealed: row.sealed, expiresAt: row.expires_at };
}
