/**
 * Abuse replay: an access key in the query string under a percent-encoded parameter name. The values
 * route takes `?token=KEY`; Fastify decodes parameter names, so `?%74oken=KEY` authenticates, while
 * the log's URL redaction matched the raw name only and wrote the key to the log. Now logged URLs are
 * redacted by the decoded name, whatever the encoding of name and value. Checked through the real
 * relay: the request authenticates (200) and the key appears nowhere in its log, raw or decoded.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { api, createCluster, logLines, type ServedRelay, serve } from './relay-fixture.js';
import { abuseRuns } from './scale.js';

let relay: ServedRelay;

beforeAll(async () => {
  buildIfStale();
  // Per-request lines are debug lines.
  relay = await serve(tempDir('abuse-token-query-'), undefined, ['--log-level', 'debug']);
  await createCluster(relay, 'vals');
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

const percentEscape = (ch: string, upper: boolean): string => {
  const hex = ch.charCodeAt(0).toString(16).padStart(2, '0');
  return `%${upper ? hex.toUpperCase() : hex}`;
};

/** `text` with each character raw or percent-escaped (either hex case), chosen by `picks`. */
function encode(text: string, picks: readonly number[]): string {
  return [...text]
    .map((ch, i) => ((picks[i % picks.length] ?? 0) === 0 ? ch : percentEscape(ch, picks[i]! > 1)))
    .join('');
}

/** Whether `needle` appears in `text` raw or once percent escapes are decoded (malformed ones kept). */
function appears(text: string, needle: string): boolean {
  const decoded = text.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) =>
    String.fromCharCode(Number.parseInt(h, 16)),
  );
  return text.includes(needle) || decoded.includes(needle);
}

describe('a key in the query string under an encoded parameter name', () => {
  it('?%74oken=KEY authenticates and the log shows no key', async () => {
    const key = relay.adminKey;
    const body = key.slice('trk_'.length);
    const urls = [
      `/clusters/vals?%74oken=${key}`,
      `/clusters/vals?source=platform-config&%74oken=${encode(key, [1])}`,
      `/clusters/vals?t%6Fken=${encode(key, [0, 2])}`,
      `/clusters/vals?%74%6f%6b%65%6e=${key}&source=cluster-annotation`,
    ];
    for (const url of urls) {
      const r = await api(relay.ready.url, 'GET', url);
      expect(r.status, `${url}: ${r.text}`).toBe(200);
    }
    // Names the parser does not read as `token` (other case, other secret names) are redacted as well.
    const names = fc.sample(
      fc.tuple(
        fc.constantFrom('token', 'TOKEN', 'Token', 'access_token', 'psk'),
        fc.array(fc.nat(2), { minLength: 1 }),
      ),
      abuseRuns(12),
    );
    for (const [name, picks] of names) {
      const path = `/clusters/vals?a=1&${encode(name, picks)}=${encode(key, picks.slice().reverse())}&b=2`;
      const r = await api(relay.ready.url, 'GET', path);
      expect([200, 400, 401]).toContain(r.status);
    }
    const logged = logLines(relay.proc)
      .filter((l) => l.msg === 'incoming request')
      .map((l) => String((l.req as { url?: string }).url))
      .filter((url) => url.startsWith('/clusters/vals?'));
    expect(logged.length).toBe(urls.length + names.length);
    for (const url of logged) expect(url).toContain('=REDACTED');
    for (const line of relay.proc.stderr.split('\n')) expect(appears(line, body), line).toBe(false);
    // stdout carries the ready line (the admin key, printed once on first start) and nothing after it.
    expect(appears(relay.proc.stdout.split('\n').slice(1).join('\n'), body)).toBe(false);
  });
});
