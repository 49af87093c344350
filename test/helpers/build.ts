/**
 * The compiled binaries the integration tests run: dist/ is rebuilt (tsconfig.build.json) when a binary is missing or
 * older than any source it is built from. test/global-setup.ts calls it once before the integration lanes start, so
 * two lanes never compile at the same time; a test file run alone calls it through cli-harness.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const RELAY_BIN = join(ROOT, 'dist/relay/cli/main.js');
export const CLIENT_BIN = join(ROOT, 'dist/tunnel-client/cli/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
      newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** Compiles dist/ when a binary is missing or older than any source it is built from. */
export function buildIfStale(): void {
  const built = Math.min(...[RELAY_BIN, CLIENT_BIN].map((f) => (existsSync(f) ? statSync(f).mtimeMs : 0)));
  const src = Math.max(...['shared', 'relay', 'tunnel-client'].map((d) => newestMtime(join(ROOT, d))));
  if (built >= src) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  } catch {
    // Type errors elsewhere in the tree still emit JavaScript; the binaries' existence is what matters.
  }
  if (!existsSync(RELAY_BIN) || !existsSync(CLIENT_BIN))
    throw new Error('build did not produce the binaries');
}
