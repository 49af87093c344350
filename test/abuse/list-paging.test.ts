/**
 * Replay of the big-list half of the Pending-cluster flood against the real `tunnel-relay serve`: with many
 * clusters each carrying the most claims an agent may send, GET /api/v1/clusters once answered every cluster in
 * one body (214 MB at 10,000). Now a call without `limit` answers one default page, `limit` is held to the
 * maximum, and following `continue` returns every cluster exactly once in name order, also while clusters are
 * created and deleted between the pages. The events feed with `?snapshot=false` (what the console opens) sends
 * `ready` at once and no cluster at all.
 */
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { serveForFile } from '../helpers/served-relay.js';
import { pollUntil } from '../helpers/wait.js';
import { api } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const CLUSTERS = 300 * abuseScale();
const CONCURRENCY = 8;
/** The relay's default and largest page of clusters (relay/control/model/paging.ts). */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;

const relay = serveForFile({
  prefix: 'abuse-list-paging',
  args: [
    '--max-pending-per-key',
    '100000',
    '--max-pending-registrations',
    '100000',
    '--write-budget',
    '1000000',
  ],
});

const claims = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`claim-${i}`, 'x'.repeat(1024)]));
const admin = () => relay.adminEnv.TUNNEL_ACCESS_KEY!;
const names = Array.from({ length: CLUSTERS }, (_, i) => `big-${String(i).padStart(5, '0')}`);

async function fill(): Promise<void> {
  const key = await api(relay.ready.url, 'POST', '/api/v1/tokens', {
    token: admin(),
    body: { role: 'bootstrap' },
  });
  expect(key.status, key.text).toBe(201);
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const cluster = names[next++]!;
      const body = {
        cluster,
        publicKey: keyToBase64(generateKeyPair().publicKey),
        agentVersion: '0.1.0',
        claims,
      };
      const r = await api(relay.ready.url, 'POST', '/api/v1/register', { token: key.body.token, body });
      expect(r.status, r.text).toBe(201);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const list = (query: string) => api(relay.ready.url, 'GET', `/api/v1/clusters${query}`, { token: admin() });

describe('a big cluster list', () => {
  it('is served a page at a time, every cluster exactly once, while clusters come and go', async () => {
    await fill();
    const first = await list('');
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(DEFAULT_PAGE);
    expect(typeof first.body.continue).toBe('string');
    expect((await list('?limit=9999')).body.items).toHaveLength(Math.min(MAX_PAGE, CLUSTERS));

    const seen: string[] = [];
    let cont: string | undefined;
    let pages = 0;
    do {
      const r = await list(`?limit=50${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(50);
      seen.push(...r.body.items.map((c: { name: string }) => c.name));
      cont = r.body.continue;
      if (++pages === 1) {
        // Between pages: one cluster after the cursor is deleted; one is created before it, one after it.
        const gone = await api(relay.ready.url, 'DELETE', `/api/v1/clusters/${names[200]}`, {
          token: admin(),
        });
        expect(gone.status, gone.text).toBe(200);
        for (const name of ['big-00000a', 'zz-late']) {
          const made = await api(relay.ready.url, 'POST', '/api/v1/clusters', {
            token: admin(),
            body: { name },
          });
          expect(made.status, made.text).toBe(201);
        }
      }
    } while (cont !== undefined);
    expect(seen).toEqual([...names.filter((n) => n !== names[200]), 'zz-late']);
    expect(pages).toBe(Math.ceil(CLUSTERS / 50));
  });

  it('opens the events feed without a snapshot when asked (?snapshot=false)', async () => {
    const u = new URL(relay.ready.url);
    const socket = tls.connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
    });
    socket.on('error', () => {});
    try {
      socket.write(
        `GET /api/v1/events?snapshot=false HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${admin()}\r\n\r\n`,
      );
      await pollUntil({
        what: 'the ready event',
        read: () => text,
        until: (t) => t.includes('event: ready'),
        timeoutMs: 10_000,
        intervalMs: 20,
      });
      expect(text).toMatch(/^HTTP\/1\.1 200 /);
      expect(text).not.toContain('event: cluster');
      // Changes still arrive.
      const made = await api(relay.ready.url, 'POST', '/api/v1/clusters', {
        token: admin(),
        body: { name: 'after-ready' },
      });
      expect(made.status).toBe(201);
      await pollUntil({
        what: 'the change',
        read: () => text,
        until: (t) => t.includes('"name":"after-ready"'),
        timeoutMs: 10_000,
        intervalMs: 20,
      });
      expect(text.match(/event: cluster\n/g)).toHaveLength(1);
      const bad = await api(relay.ready.url, 'GET', '/api/v1/events?snapshot=no', { token: admin() });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toBe('snapshot "no" is not valid: expected true or false');
    } finally {
      socket.destroy();
    }
  });
});
