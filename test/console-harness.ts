/**
 * Helpers for the web console tests: build dist/console when it is missing or older than console/, start the
 * real relay, and launch Debian's chromium (/usr/bin/chromium, headless) through playwright-core.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { buildIfStale, ROOT } from './cli-harness.js';

export const CONSOLE_DIST = join(ROOT, 'dist/console');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let n = st.mtimeMs;
  for (const e of readdirSync(path)) if (!e.endsWith('.test.ts')) n = Math.max(n, newest(join(path, e)));
  return n;
}

/** The relay binaries and the console build, rebuilt when stale. */
export function buildConsoleIfStale(): void {
  buildIfStale();
  const index = join(CONSOLE_DIST, 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(ROOT, 'console'))) return;
  execFileSync('npx', ['vite', 'build', '--config', 'console/vite.config.ts'], {
    cwd: ROOT,
    stdio: 'pipe',
    timeout: 120_000,
  });
}

/** The built files, relative to dist/console (what the relay may serve). */
export function builtFiles(dir = CONSOLE_DIST): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) for (const f of builtFiles(join(dir, e.name))) out.push(`${e.name}/${f}`);
    else out.push(e.name);
  }
  return out;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI has no user namespaces for chromium's sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
    timeout: 30_000,
  });
}
