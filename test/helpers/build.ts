/**
 * The compiled binaries the integration tests run: dist/ is rebuilt (tsconfig.build.json) when a binary is missing or
 * older than any source it is built from. test/global-setup.ts calls it before a vitest process runs integration
 * files, and a test file run alone calls it through cli-harness.ts. The check and the build hold a lock file, so the
 * two lanes' processes (test/run-lanes.mjs) never compile at the same time or start a half-written binary.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

/** A lock file per checkout, so that processes of one checkout build one at a time. */
const LOCK = join(
  tmpdir(),
  `tunnel-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 16)}.lock`,
);
/** A lock older than this was left by a process that died while building. */
const LOCK_STALE_MS = 300_000;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function withBuildLock(build: () => void): void {
  const deadline = Date.now() + LOCK_STALE_MS;
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = existsSync(LOCK) ? Date.now() - statSync(LOCK).mtimeMs : 0;
      if (age > LOCK_STALE_MS) rmSync(LOCK, { force: true });
      else if (Date.now() > deadline) throw new Error(`build lock ${LOCK} held for over 5 min`);
      else sleepSync(200);
    }
  }
  try {
    build();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

/** Compiles dist/ when a binary is missing or older than any source it is built from. */
export function buildIfStale(): void {
  withBuildLock(buildWhenStale);
}

function buildWhenStale(): void {
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
