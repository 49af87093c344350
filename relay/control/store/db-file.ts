/**
 * The SQLite store's files hold the per-pair WireGuard preshared keys in clear, so they are secret
 * files (shared/kit/secret-file.ts). SQLite creates `-wal` and `-shm` with the main file's permission
 * bits, so the main file is created 0600 before better-sqlite3 opens it, and any of the three left
 * with a wider mode (an older build, a crash under umask 022) is brought back to 0600 first.
 */
import {
  createSecretFileIfMissing,
  type OnModeFixed,
  protectSecretFile,
} from '../../../shared/kit/secret-file.js';

/** The files SQLite keeps next to the database in WAL mode. */
export const SQLITE_SIDE_FILES = ['-wal', '-shm', '-journal'] as const;

export function prepareDbFile(path: string, onFixed: OnModeFixed): void {
  if (path === ':memory:' || path === '') return;
  for (const suffix of ['', ...SQLITE_SIDE_FILES]) protectSecretFile(path + suffix, 'store file', onFixed);
  createSecretFileIfMissing(path);
}
