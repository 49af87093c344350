import { chmod, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../keys.js';
import { readPrivateKeyFile, withKeyFile, writePrivateKeyFile } from './key-file.js';

describe('private key files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keyfile-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the file with mode 0600 even under a permissive umask', async () => {
    const old = process.umask(0);
    try {
      const p = join(dir, 'a.key');
      const k = generateKeyPair().privateKey;
      await writePrivateKeyFile(p, k);
      expect((await stat(p)).mode & 0o777).toBe(0o600);
      expect((await readPrivateKeyFile(p)).equals(k)).toBe(true);
    } finally {
      process.umask(old);
    }
  });

  it('replaces an existing world-readable file with a 0600 one, leaving no temp files', async () => {
    const p = join(dir, 'b.key');
    await writeFile(p, 'old\n');
    await chmod(p, 0o644);
    const k = generateKeyPair().privateKey;
    await writePrivateKeyFile(p, k);
    expect((await stat(p)).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses to read a key file that group or others can read', async () => {
    const p = join(dir, 'c.key');
    await writeFile(p, `${keyToBase64(generateKeyPair().privateKey)}\n`);
    await chmod(p, 0o640);
    await expect(readPrivateKeyFile(p)).rejects.toMatchObject({ code: 'BAD_CONFIG' });
    await expect(readPrivateKeyFile(p)).rejects.toThrow(/chmod 600/);
  });

  it('withKeyFile provides a 0600 file in a 0700 directory and deletes both', async () => {
    const k = generateKeyPair().privateKey;
    let seen = '';
    await withKeyFile(k, async (p) => {
      seen = p;
      expect((await stat(p)).mode & 0o777).toBe(0o600);
      expect((await stat(join(p, '..'))).mode & 0o777).toBe(0o700);
      expect((await readPrivateKeyFile(p)).equals(k)).toBe(true);
    });
    await expect(stat(seen)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(join(seen, '..'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
