/**
 * Minting an admin access key straight into a store: the first start's key (relay/start/identity.ts) and the
 * offline recovery command `tunnel-relay admin-key create --data-dir DIR` (relay/cli/admin-key.ts). The
 * store keeps only the hash; the key is returned once. The audit entry is written in the same transaction.
 * Neither is refused by the access-key caps (docs/LIMITS.md): a store full of live keys is still recoverable.
 */

import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { shellQuote } from '../../shared/kit/cli/shell-quote.js';
import type { AuditEntry, Store } from '../control/store/types.js';
import type { RelayConfig } from '../ops/config/config.js';
import { describeTarget } from '../ops/config/postgres-url.js';
import { hashSecret, newId, newSecret } from '../ops/secrets.js';

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
      minted: null,
    },
    hashSecret(token),
    audit,
    // The recovery must work whatever keys the store holds: the caps do not refuse it.
    { cap: 'exempt' },
  );
  return { id, token };
}

/**
 * Logs a warning with the recovery command (`recovery`, for this relay's data dir or store) when no admin key is
 * active (all revoked or expired).
 */
export async function warnIfNoAdminKey(
  store: Store,
  now: number,
  log: Logger,
  recovery: string,
): Promise<void> {
  const keys = await store.listAccessKeys();
  const active = keys.some(
    (k) => k.role === 'admin' && k.revokedAt === null && (k.expiresAt === null || k.expiresAt > now),
  );
  if (active) return;
  log.warn(
    `no active admin access key (revoked or expired): mint one with \`${recovery}\` ` +
      '(see docs/OPERATIONS.md, "Recovering admin access")',
  );
}

/**
 * The offline recovery command for this relay's store, runnable as printed for SQLite (`--data-dir DIR`, or
 * `--store sqlite:PATH` for a store outside the data dir); for PostgreSQL the URL, with the password-file and CA
 * flags the relay itself runs with still to add.
 */
export function adminKeyRecovery(config: Pick<RelayConfig, 'dataDir' | 'store'>): string {
  const base = 'tunnel-relay admin-key create';
  if (config.store.kind === 'postgres') {
    return `${base} --store ${shellQuote(describeTarget(config.store.target))} (plus the --store-* flags serve runs with)`;
  }
  if (resolve(config.store.path) === resolve(join(config.dataDir, 'relay.db'))) {
    return `${base} --data-dir ${shellQuote(resolve(config.dataDir))}`;
  }
  return `${base} --store ${shellQuote(`sqlite:${resolve(config.store.path)}`)}`;
}
