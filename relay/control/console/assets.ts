/**
 * The web console's built files (dist/console, made by `npm run build`), read once into memory at start. Only
 * the files found there are ever served, so no request path can name a file outside the build.
 */

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One built file: its bytes and the headers it is served with. */
export interface ConsoleAsset {
  body: Buffer;
  contentType: string;
  etag: string;
  /** Hashed file names under assets/ never change: cached for a year; everything else is revalidated. */
  immutable: boolean;
}

/** The built console: relative path (`index.html`, `assets/index-abc.js`) to file. */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

/** Total bytes the relay will hold for the console; a build over this is refused (not loaded). */
export const MAX_CONSOLE_BYTES = 8 * 1024 * 1024;
export const MAX_CONSOLE_FILES = 200;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

export function contentTypeOf(path: string): string {
  return TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Where the build is: dist/console beside the compiled relay (dist/relay/control/console/assets.js), or
 * <repo>/dist/console when the relay runs from source (tests).
 */
export function defaultConsoleDir(): string {
  const up = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  return basename(up) === 'dist' ? join(up, 'console') : join(up, 'dist', 'console');
}

function listFiles(dir: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) listFiles(p, out);
    else if (entry.isFile()) out.push(p);
    if (out.length > MAX_CONSOLE_FILES) return;
  }
}

/** Reads the build in `dir`; an empty map when there is none (the routes then answer 404 saying so). */
export function loadConsoleAssets(dir: string = defaultConsoleDir()): ConsoleAssets {
  const assets = new Map<string, ConsoleAsset>();
  if (!existsSync(join(dir, 'index.html'))) return assets;
  const files: string[] = [];
  listFiles(dir, files);
  let total = 0;
  for (const file of files.slice(0, MAX_CONSOLE_FILES)) {
    total += statSync(file).size;
    if (total > MAX_CONSOLE_BYTES) return new Map();
    const body = readFileSync(file);
    const rel = relative(dir, file).split(sep).join('/');
    assets.set(rel, {
      body,
      contentType: contentTypeOf(rel),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: rel.startsWith('assets/'),
    });
  }
  return assets;
}
