/**
 * Private key files: base64 plus a newline (the `wg genkey` format), mode 0600, written to a
 * temporary file in the same directory and renamed into place, so a reader never sees a partial
 * key and an existing file with a wider mode is replaced rather than reused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { TunnelError } from '../../errors.js';
import { keyToBase64, parseKey } from '../../keys.js';

export const PRIVATE_KEY_FILE_MODE = 0o600;

export async function writePrivateKeyFile(path: string, key: Uint8Array): Promise<void> {
  const text = `${keyToBase64(key)}\n`;
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx', PRIVATE_KEY_FILE_MODE);
  try {
    await fh.chmod(PRIVATE_KEY_FILE_MODE); // umask may have narrowed it; never widened
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

/**
 * Reads a key file written by writePrivateKeyFile or `wg genkey`. Refuses (BAD_CONFIG) a file
 * readable or writable by group or others, as ssh does.
 */
export async function readPrivateKeyFile(path: string): Promise<Buffer> {
  const st = await stat(path);
  if ((st.mode & 0o077) !== 0) {
    throw new TunnelError(
      'BAD_CONFIG',
      `private key file ${path} has mode ${(st.mode & 0o777).toString(8)}; it must be 600 (chmod 600 ${path})`,
    );
  }
  return parseKey(await readFile(path, 'utf8'), `private key file ${path}`);
}

/**
 * Runs `fn` with a 0600 file holding `key` in a fresh 0700 temporary directory, deleted afterwards
 * (`wg set` reads private and preshared keys only from files).
 */
export async function withKeyFile<T>(key: Uint8Array, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'wgkey-'));
  try {
    const path = join(dir, 'key');
    await writePrivateKeyFile(path, key);
    return await fn(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
