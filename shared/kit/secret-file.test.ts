import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createSecretFileIfMissing,
  type ModeFix,
  protectSecretFile,
  writeNewSecretFile,
} from './secret-file.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function file(mode: number): string {
  const d = mkdtempSync(join(tmpdir(), 'secret-file-'));
  dirs.push(d);
  chmodSync(d, 0o755);
  const p = join(d, 'key');
  writeFileSync(p, 'secret\n');
  chmodSync(p, mode);
  return p;
}

const modeOf = (p: string) => statSync(p).mode & 0o777;

describe('protectSecretFile', () => {
  it('sets a file of ours open to group or others back to owner-only and reports the old mode', () => {
    for (const [before, after] of [
      [0o644, 0o600],
      [0o660, 0o600],
      [0o604, 0o600],
      [0o755, 0o700],
    ] as const) {
      const p = file(before);
      const fixes: ModeFix[] = [];
      protectSecretFile(p, 'test key', (f) => fixes.push(f));
      expect(modeOf(p)).toBe(after);
      expect(fixes).toEqual([
        {
          file: p,
          oldMode: before.toString(8),
          message: expect.stringContaining(`test key ${p} had mode ${before.toString(8)}`),
        },
      ]);
    }
  });

  it('leaves 0600 and 0400 files and missing files alone', () => {
    for (const mode of [0o600, 0o400]) {
      const p = file(mode);
      protectSecretFile(p, 'k', () => expect.unreachable());
      expect(modeOf(p)).toBe(mode);
    }
    protectSecretFile(join(tmpdir(), 'no-such-secret-file'), 'k', () => expect.unreachable());
  });
});

describe('creating secret files', () => {
  it('writeNewSecretFile and createSecretFileIfMissing make 0600 files and never reuse one', () => {
    const d = mkdtempSync(join(tmpdir(), 'secret-file-'));
    dirs.push(d);
    writeNewSecretFile(join(d, 'a'), 'x');
    expect(modeOf(join(d, 'a'))).toBe(0o600);
    expect(() => writeNewSecretFile(join(d, 'a'), 'y')).toThrow(/EEXIST/);
    expect(createSecretFileIfMissing(join(d, 'b'))).toBe(true);
    expect(modeOf(join(d, 'b'))).toBe(0o600);
    expect(createSecretFileIfMissing(join(d, 'b'))).toBe(false);
  });
});
