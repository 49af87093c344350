/**
 * The web console's build: console/ -> dist/console, served by the relay under /ui/ (relay/control/api/routes/console.ts).
 * No inline script or style (the relay's Content-Security-Policy forbids both), no source maps.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: '/ui/',
  logLevel: 'warn',
  // console/public (the favicon) is copied as is to dist/console, served at /ui/favicon.svg.
  publicDir: resolve(here, 'public'),
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: resolve(here, '../dist/console'),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
  },
});
