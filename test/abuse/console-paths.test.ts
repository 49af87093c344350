/**
 * Abuse replay: paths that try to leave the web console's build (dot segments raw, percent-encoded,
 * double-encoded, backslashes, NUL, doubled slashes) sent unnormalized to the real relay. The console routes
 * serve only the files they loaded from dist/console, so every answer is a built file byte for byte, a
 * redirect to /ui/, or the 400/404 error envelope; never another file of the relay host.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, tempDir } from '../cli-harness.js';
import { buildConsoleIfStale, builtFiles, CONSOLE_DIST } from '../console-harness.js';
import { type ServedRelay, serve } from './relay-fixture.js';
import { abuseRuns } from './scale.js';

let relay: ServedRelay;
let built: Buffer[];
const agent = new https.Agent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: false });

beforeAll(async () => {
  buildConsoleIfStale();
  built = builtFiles().map((f) => readFileSync(join(CONSOLE_DIST, f)));
  relay = await serve(tempDir('abuse-console-paths-'));
}, 180_000);

afterAll(async () => {
  agent.destroy();
  await relay?.proc.stop();
  await cleanup();
});

/** GET with the path exactly as given (no URL parsing, so no dot-segment removal on our side). */
function rawGet(path: string): Promise<{ status: number; location: string | undefined; body: Buffer }> {
  const { hostname, port } = new URL(relay.ready.url);
  return new Promise((resolve, reject) => {
    const req = https.request({ agent, hostname, port, path, method: 'GET', timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks) }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`no answer for ${path}`)));
    req.on('error', reject);
    req.end();
  });
}

/** Ways to write a parent-directory segment, and what may stand between segments. */
const UPS = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%252e%252e', '..\\'];
const SEPARATORS = ['/', '%2f', '%2F', '//', '%5c'];
const NOISE = ['.', '', 'assets', 'index.html', '%00', 'x'];
/** Files outside the build: the repository's, the relay's data and the host's. */
const TARGETS = [
  'package.json',
  'etc/passwd',
  'etc%2fpasswd',
  'relay/start/server.ts',
  'tls/key.pem',
  'index.html%00',
];

describe('console paths', () => {
  it('answer only with built files, a redirect to /ui/, or the error envelope', async () => {
    const path = fc
      .tuple(
        fc.constantFrom('/ui/', '/ui/assets/', '/', '//ui/'),
        fc.array(fc.constantFrom(...NOISE), { maxLength: 2 }),
        fc.array(fc.constantFrom(...UPS), { maxLength: 9 }),
        fc.constantFrom(...TARGETS),
        fc.constantFrom(...SEPARATORS),
      )
      .map(([prefix, noise, ups, target, sep]) => `${prefix}${[...noise, ...ups, target].join(sep)}`);
    await fc.assert(
      fc.asyncProperty(path, async (p) => {
        const r = await rawGet(p);
        if (r.status === 200) {
          expect(
            built.some((b) => b.equals(r.body)),
            p,
          ).toBe(true);
        } else if (r.status === 301 || r.status === 302) {
          expect(r.location, p).toBe('/ui/');
        } else {
          expect([400, 404], p).toContain(r.status);
          expect(JSON.parse(r.body.toString()).error.code, p).toMatch(/^(NOT_FOUND|BAD_INPUT)$/);
        }
      }),
      { numRuns: abuseRuns(150) },
    );
  }, 60_000);
});
