/**
 * Files that hold secrets (private keys, credentials, preshared keys, the relay's SQLite store): created
 * 0600 whatever the umask and the directory's mode, and checked each time they are opened.
 *
 * An existing secret file that grants any access to group or others is handled like this:
 *   - owned by this process's user: set to 0600 (group and other bits cleared) and reported through
 *     `onFixed`, which the caller turns into a warning carrying the code INSECURE_FILE_MODE;
 *   - owned by another user and readable or writable by others (every local user): refused with
 *     INSECURE_FILE_MODE, since it cannot be fixed from here;
 *   - owned by another user and open to its group only: accepted (that is how a shared group, such as
 *     a root-owned TLS key in group ssl-cert or a Kubernetes secret volume with fsGroup, lets this
 *     process read a file it does not own);
 *   - when the chmod itself fails (read-only file system): refused with INSECURE_FILE_MODE.
 */
import { chmodSync, closeSync, constants, openSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { TunnelError } from '../errors.js';

export const SECRET_FILE_MODE = 0o600;

/** What was changed on a secret file that had a wider mode. */
export interface ModeFix {
  readonly file: string;
  /** The mode before, octal, e.g. `644`. */
  readonly oldMode: string;
  /** One line for the log: names the file, both modes and what to do. */
  readonly message: string;
}

export type OnModeFixed = (fix: ModeFix) => void;

/** The default reporter: one `warning INSECURE_FILE_MODE: ...` line on stderr. */
export const warnOnStderr: OnModeFixed = (fix) => {
  process.stderr.write(`warning INSECURE_FILE_MODE: ${fix.message}\n`);
};

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(3, '0');
}

function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * Checks an existing secret file's mode as described above; does nothing when the file cannot be
 * stat'ed (missing, no access).
 * `what` names the file's role in messages (e.g. `hub private key`).
 */
export function protectSecretFile(path: string, what: string, onFixed: OnModeFixed = warnOnStderr): void {
  let st: Stats;
  try {
    st = statSync(path);
  } catch {
    return; // missing or unreadable: the read that follows reports it, naming its setting
  }
  const mode = st.mode;
  if ((mode & 0o077) === 0) return;
  const uid = currentUid();
  if (uid !== undefined && st.uid !== uid) {
    if ((mode & 0o007) === 0) return;
    throw new TunnelError(
      'INSECURE_FILE_MODE',
      `${what} ${path} has mode ${octal(mode)} and belongs to uid ${st.uid}: it is open to every local user; ` +
        `its owner must run chmod o-rwx ${path}`,
    );
  }
  const fixed = mode & 0o700;
  try {
    chmodSync(path, fixed);
  } catch (err) {
    throw new TunnelError(
      'INSECURE_FILE_MODE',
      `${what} ${path} has mode ${octal(mode)} (readable by group or others) and cannot be set to ${octal(fixed)} ` +
        `(${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  onFixed({
    file: path,
    oldMode: octal(mode),
    message:
      `${what} ${path} had mode ${octal(mode)} (open to group or others); set to ${octal(fixed)}. ` +
      'Treat what it holds as exposed to whoever could read it.',
  });
}

/** Writes `data` to a new file (exclusive create) with mode 0600, whatever the umask. */
export function writeNewSecretFile(path: string, data: string): void {
  writeFileSync(path, data, { mode: SECRET_FILE_MODE, flag: 'wx' });
  chmodSync(path, SECRET_FILE_MODE);
}

/**
 * Creates an empty 0600 file at `path` unless one exists (so a program that creates it later, such as
 * SQLite, finds it with the right mode). Returns true when it created the file.
 */
export function createSecretFileIfMissing(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, SECRET_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  closeSync(fd);
  chmodSync(path, SECRET_FILE_MODE);
  return true;
}
