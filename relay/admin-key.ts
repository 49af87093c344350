/**
 * Minting an admin access key straight into a store: the first start's key (relay/identity.ts) and the
 * offline recovery command `tunnel-relay admin-key create --data-dir DIR` (relay/cli/admin-key.ts). The
 * store keeps only the hash; the key is returned once. The audit entry is written in the same transaction.
 */
import type { Logger } from 'pino';
import { hashSecret, newId, newSecret } from './secrets.js';
import type { AuditEntry, Store } from './store/types.js';

export interface MintAdminKeyOptions {
  now: number;
  description: string;
  /** Who minted it, as the audit entry names it (`system` on first start, `local` offline). */
  actor: string;
  detail: Record<string, unknown>;
}

export async function mintAdminKey(
  store: Store,
  opts: MintAdminKeyOptions,
): Promise<{ id: string; token: string }> {
  const id = newId('k_');
  const token = newSecret('accessKey');
  const audit: AuditEntry = {
    at: opts.now,
    actor: opts.actor,
    action: 'token.create',
    target: id,
    source: 'local',
    detail: { role: 'admin', ...opts.detail },
  };
  await store.createAccessKey(
    {
      id,
      role: 'admin',
      description: opts.description,
      createdAt: opts.now,
      expiresAt: null,
      revokedAt: null,
    },
    hashSecret(token),
    audit,
  );
  return { id, token };
}

/** Logs a warning with the recovery command when no admin key is active (all revoked or expired). */
export async function warnIfNoAdminKey(store: Store, now: number, log: Logger): Promise<void> {
  const keys = await store.listAccessKeys();
  const active = keys.some(
    (k) => k.role === 'admin' && k.revokedAt === null && (k.expiresAt === null || k.expiresAt > now),
  );
  if (active) return;
  log.warn(
    'no active admin access key (revoked or expired): mint one with `tunnel-relay admin-key create --data-dir DIR` ' +
      '(see docs/OPERATIONS.md, "Recovering admin access")',
  );
}
