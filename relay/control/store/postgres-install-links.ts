/** Bootstrap PSKs with their install links in the PostgreSQL store (inside PostgresStore's transactions). */

import { LINK_SELECT, type LinkRow, linkRefusal, takenLink } from './install-link-rows.js';
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

/**
 * Reads and, when good, consumes the link. The transaction is SERIALIZABLE and the update is guarded by
 * `used_at IS NULL`, so of two replicas taking the same link at once one gets it and the other, run
 * again, sees it used.
 */
export async function takeInstallLinkPg(tx: Tx, hash: string, now: number): Promise<TakeInstallResult> {
  const row = await tx.one<LinkRow>(`${LINK_SELECT} WHERE l.hash = $1`, [hash]);
  const refusal = linkRefusal(row, now);
  if (refusal || !row) return refusal ?? { ok: false, reason: 'unknown' };
  const changed = await tx.run(
    'UPDATE install_links SET used_at = $1, sealed = NULL WHERE hash = $2 AND used_at IS NULL',
    [now, hash],
  );
  return takenLink(row, changed);
}
