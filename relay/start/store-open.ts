/**
 * Opens the configured store: SQLite (file prepared 0600 first) or PostgreSQL (connects and migrates;
 * BAD_CONFIG naming the server when it cannot).
 */
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { type OnModeFixed, warnOnStderr } from '../../shared/kit/secret-file.js';
import { prepareDbFile } from '../control/store/db-file.js';
import { PostgresStore } from '../control/store/postgres.js';
import { SqliteStore } from '../control/store/sqlite.js';
import type { Store, StoreLimits } from '../control/store/types.js';
import type { RelayConfig } from '../ops/config/config.js';

export interface OpenStoreOptions {
  /** A SQLite file whose mode had to be narrowed (default: a warning on stderr). */
  onModeFixed?: OnModeFixed;
  /** PostgreSQL connection trouble after the start (default: a line on stderr). */
  onStoreError?: (message: string) => void;
  /** PostgreSQL: refuse a database without a relay store instead of creating one (offline tools). */
  existingOnly?: boolean;
}

/** The store's caps from `--max-pending-*` and `--audit-*` (the others keep the store's defaults). */
export function storeLimitsOf(config: RelayConfig): Partial<StoreLimits> {
  const c = config.controlLimits;
  return {
    maxAuditRows: c.auditMaxRows,
    auditRetentionMs: c.auditRetentionMs,
    maxPendingRegistrations: c.maxPendingRegistrations,
    maxPendingPerKey: c.maxPendingPerKey,
  };
}

export async function openStore(config: RelayConfig, opts: OpenStoreOptions = {}): Promise<Store> {
  const onModeFixed = opts.onModeFixed ?? warnOnStderr;
  if (config.store.kind === 'postgres') {
    const pgConfig = config.store;
    return PostgresStore.open({
      connection: { target: pgConfig.target, password: pgConfig.password?.reveal() ?? null, ca: pgConfig.ca },
      poolSize: pgConfig.poolSize,
      onError: opts.onStoreError ?? ((m) => process.stderr.write(`${m}\n`)),
      existingOnly: opts.existingOnly ?? false,
      limits: storeLimitsOf(config),
    });
  }
  try {
    prepareDbFile(config.store.path, onModeFixed);
    return new SqliteStore(config.store.path, storeLimitsOf(config));
  } catch (err) {
    if (isTunnelError(err)) throw err;
    const reason = (err as { code?: string }).code ?? (err as Error).message;
    throw new TunnelError('BAD_CONFIG', `store: cannot open sqlite:${config.store.path} (${reason})`);
  }
}
