/**
 * `tunnel-relay rate-limit list|clear` and the API under it, through the real binaries: a source that
 * failed registrations (bound to 127.0.0.x) is listed with when it may retry, an admin clears it (audited),
 * a viewer may list but not clear, and bad flags exit 2 naming the value.
 */
import { describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { RELAY_BIN, run } from './cli-harness.js';
import { type FromSourceReply, requestFrom } from './helpers/from-source.js';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'rate-limit-cli' });

const admin = (...args: string[]) => relay.admin(...args);

function failFrom(from: string): Promise<FromSourceReply> {
  return requestFrom({
    url: relay.ready.url,
    caPem: relay.caPem,
    localAddress: from,
    method: 'POST',
    path: '/api/v1/register',
    token: `tpsk_${'Q'.repeat(43)}`,
    body: { cluster: 'nobody', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
  });
}

interface Listed {
  max: number;
  windowSeconds: number;
  items: Array<{ source: string; failures: number; limited: boolean; retryAfterSeconds: number | null }>;
}

describe('tunnel-relay rate-limit', () => {
  it('lists a limited source with its retry time, clears it, and audits the clear', async () => {
    for (let i = 0; i < 10; i++) expect((await failFrom('127.0.0.7')).status).toBe(401);
    expect((await failFrom('127.0.0.7')).status).toBe(429);
    expect((await failFrom('127.0.0.8')).status).toBe(401);

    const listed = await admin('rate-limit', 'list', '--output', 'json');
    expect(listed.code, listed.stderr).toBe(0);
    const doc = JSON.parse(listed.stdout) as Listed;
    expect(doc).toMatchObject({ max: 10, windowSeconds: 300 });
    const seven = doc.items.find((i) => i.source === '127.0.0.7');
    expect(seven).toMatchObject({ failures: 10, limited: true });
    expect(seven?.retryAfterSeconds).toBeGreaterThan(250);
    expect(doc.items.find((i) => i.source === '127.0.0.8')).toMatchObject({
      failures: 1,
      limited: false,
      retryAfterSeconds: null,
    });
    const text = await admin('rate-limit', 'list');
    expect(text.stdout).toMatch(/^SOURCE\s+FAILURES\s+LIMITED\s+RETRY AFTER\s+WINDOW ENDS$/m);
    expect(text.stdout).toMatch(/^127\.0\.0\.7\s+10\s+yes\s+\d+s\s+20\d\d-/m);

    const cleared = await admin('rate-limit', 'clear', '--source', '127.0.0.7');
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(cleared.stdout).toBe('cleared 127.0.0.7 (10 failed registrations, was limited)\n');
    expect((await failFrom('127.0.0.7')).status).toBe(401);

    const audit = await admin('audit', '--output', 'json');
    const entry = JSON.parse(audit.stdout).items.find(
      (a: { action: string }) => a.action === 'rate-limit.clear',
    );
    expect(entry).toMatchObject({ target: '127.0.0.7', actor: expect.stringMatching(/^k_/) });
    expect(entry.detail).toMatchObject({
      count: 1,
      sources: [{ source: '127.0.0.7', failures: 10, limited: true }],
    });

    const all = await admin('rate-limit', 'clear', '--all', '--output', 'json');
    expect(
      JSON.parse(all.stdout)
        .cleared.map((i: { source: string }) => i.source)
        .sort(),
    ).toEqual(['127.0.0.7', '127.0.0.8']);
    expect(JSON.parse((await admin('rate-limit', 'list', '--output', 'json')).stdout).items).toEqual([]);
  });

  it('a viewer may list but not clear; unknown sources and bad flags are named', async () => {
    const created = await admin('token', 'create', '--role', 'viewer', '--output', 'json');
    const viewerEnv = { ...relay.adminEnv, TUNNEL_ACCESS_KEY: JSON.parse(created.stdout).token };
    expect((await run(RELAY_BIN, ['rate-limit', 'list'], viewerEnv)).code).toBe(0);
    const denied = await run(RELAY_BIN, ['rate-limit', 'clear', '--all'], viewerEnv);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^error FORBIDDEN: role viewer may not clear rate limits/);

    const unknown = await admin('rate-limit', 'clear', '--source', '127.0.0.99');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error NOT_FOUND: source 127\.0\.0\.99 has no failed registrations/);
    const bad = await admin('rate-limit', 'clear', '--source', 'relay.example');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error BAD_INPUT: --source "relay\.example" is not an IP address/);
    for (const query of ['', '?source=127.0.0.7&all=true', '?all=yes', '?source=10.0.0.0%2F8', '?other=1']) {
      const r = await requestFrom({
        url: relay.ready.url,
        caPem: relay.caPem,
        localAddress: '127.0.0.1',
        method: 'DELETE',
        path: `/api/v1/rate-limits${query}`,
        token: relay.ready.adminKey!,
      });
      expect([r.status, r.body.error?.code], query).toEqual([400, 'BAD_INPUT']);
    }
    const neither = await admin('rate-limit', 'clear');
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/^error BAD_INPUT: give exactly one of --source ADDRESS or --all/);
  });
});
