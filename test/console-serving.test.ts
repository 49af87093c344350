/**
 * The relay serves the built console under /ui/ on its TLS port: / redirects there, every answer carries the
 * Content-Security-Policy and no-sniff headers, the favicon is served (and /favicon.ico leads to it), files have their content types and cache headers, and
 * GET /api/v1/whoami names the calling key's role. Real `tunnel-relay serve`, real curl.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminEnvOf,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { buildConsoleIfStale, builtFiles, CONSOLE_DIST } from './console-harness.js';

let relay: Proc;
let ready: ReadyLine;

beforeAll(async () => {
  buildConsoleIfStale();
  ({ proc: relay, ready } = await startServe(tempDir('console-serving-'), '127.0.0.1:0'));
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

/** Status line and headers (lower-cased names) of a GET, with the body. */
async function get(path: string, headers: string[] = []) {
  const r = await curl(
    ['-sk', '--path-as-is', '-D', '-', ...headers.flatMap((h) => ['-H', h]), `${ready.url}${path}`],
    15_000,
  );
  const [head = '', ...rest] = r.stdout.split('\r\n\r\n');
  const lines = head.split('\r\n');
  const status = Number(lines[0]?.split(' ')[1]);
  const h: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    h[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status, headers: h, body: rest.join('\r\n\r\n') };
}

describe('console files', () => {
  it('/ and /ui redirect to /ui/', async () => {
    const root = await get('/');
    expect(root.status).toBe(302);
    expect(root.headers.location).toBe('/ui/');
    const ui = await get('/ui');
    expect(ui.status).toBe(301);
    expect(ui.headers.location).toBe('/ui/');
  });

  it('/ui/ is the built index.html with a strict CSP, no-sniff, no framing, revalidated', async () => {
    const r = await get('/ui/');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.body).toBe(readFileSync(join(CONSOLE_DIST, 'index.html'), 'utf8'));
    const csp = r.headers['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['x-frame-options']).toBe('DENY');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
    expect(r.headers['cache-control']).toBe('no-cache');
    // Nothing inline for the CSP to block: every script has a src, no style element or attribute.
    expect(r.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(r.body).not.toMatch(/<style|\sstyle=/);
    expect(r.body).not.toMatch(/https?:\/\//);
  });

  it('every built file is served with its content type, hashed assets cached as immutable, ETag revalidation', async () => {
    const files = builtFiles().filter((f) => f.startsWith('assets/'));
    expect(files.some((f) => f.endsWith('.js'))).toBe(true);
    expect(files.some((f) => f.endsWith('.css'))).toBe(true);
    for (const f of files) {
      const r = await get(`/ui/${f}`);
      expect(r.status, f).toBe(200);
      const want = f.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8';
      expect(r.headers['content-type'], f).toBe(want);
      expect(r.headers['cache-control'], f).toBe('public, max-age=31536000, immutable');
      expect(r.headers['content-security-policy'], f).toContain("default-src 'none'");
      expect(r.body).toBe(readFileSync(join(CONSOLE_DIST, f), 'utf8'));
      // The bundles fetch nothing from elsewhere at run time.
      expect(r.body, f).not.toMatch(/https:\/\/(?!www\.w3\.org)[a-z]/);
      const again = await get(`/ui/${f}`, [`If-None-Match: ${r.headers.etag}`]);
      expect(again.status, f).toBe(304);
      expect(again.body).toBe('');
    }
  });

  it('serves the favicon the page links, also at /favicon.ico', async () => {
    const index = (await get('/ui/')).body;
    expect(index).toContain('<link rel="icon" type="image/svg+xml" href="/ui/favicon.svg" />');
    const icon = await get('/ui/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
    expect(icon.body).toMatch(/^<svg /);
    const root = await get('/favicon.ico');
    expect(root.status).toBe(301);
    expect(root.headers.location).toBe('/ui/favicon.svg');
  });

  it('a path outside the build is 404 with the error envelope, whatever its spelling', async () => {
    for (const p of [
      '/ui/../package.json',
      '/ui/assets/../../package.json',
      '/ui/%2e%2e/%2e%2e/package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui/assets/..%2f..%2f..%2fpackage.json',
      '/ui//etc/passwd',
      '/ui/index.html%00.js',
      '/ui/nope.js',
    ]) {
      const r = await get(p);
      expect([400, 404], p).toContain(r.status);
      expect(r.body, p).not.toContain('"name": "wg-relay-tunnel"');
      expect(JSON.parse(r.body).error.code, p).toMatch(/^(NOT_FOUND|BAD_INPUT)$/);
    }
  });
});

describe('GET /api/v1/whoami', () => {
  it("names the key's id, role and group; no key is 401", async () => {
    const admin = await get('/api/v1/whoami', [`Authorization: Bearer ${ready.adminKey}`]);
    expect(admin.status).toBe(200);
    expect(JSON.parse(admin.body)).toMatchObject({ role: 'admin', group: null, expiresAt: null });
    const created = await run(
      RELAY_BIN,
      ['token', 'create', '--role', 'group-editor:edge', '--output', 'json'],
      adminEnvOf(ready),
    );
    const key = JSON.parse(created.stdout) as { id: string; token: string };
    const editor = await get('/api/v1/whoami', [`Authorization: Bearer ${key.token}`]);
    expect(JSON.parse(editor.body)).toEqual({
      keyId: key.id,
      role: 'group-editor:edge',
      group: 'edge',
      expiresAt: null,
    });
    const none = await get('/api/v1/whoami');
    expect(none.status).toBe(401);
  });
});
