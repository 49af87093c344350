/**
 * Holding the events feed (GET /api/v1/events) against the real `tunnel-relay serve`: streams opened until the
 * relay-wide cap answer 503 AT_CAPACITY (each key at its own cap of 8), and the slots come back once they
 * close; consumers that stop reading are dropped once their queue overflows for 5 s (counted as `slow` in /metrics)
 * while a consumer that reads gets every change and stays open. ABUSE_SCALE multiplies the slow consumers.
 */
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import {
  buildIfStale,
  cleanup,
  curl,
  type Proc,
  type ReadyLine,
  sleep,
  startServe,
  tempDir,
} from '../cli-harness.js';
import { api, EventCurl } from '../events-fixture.js';
import { pollUntil } from '../helpers/wait.js';
import { abuseScale } from './scale.js';

/** The relay's caps (relay/control/api/routes/events.ts, docs/LIMITS.md). */
const MAX_STREAMS = 128;
const FAT_CLUSTERS = 100;
const PER_KEY = 8;

let relay: Proc;
let ready: ReadyLine;
let caFile: string;
let adminKey: string;

const call = (method: string, path: string, body?: unknown, key = adminKey) =>
  api({ url: ready.url, key, caFile }, method, path, body);

async function viewerKey(): Promise<string> {
  const r = await call('POST', '/api/v1/tokens', { role: 'viewer' });
  expect(r.status).toBe(201);
  return String(r.body.token);
}

/** A raw TLS client on the feed: it reads up to `ready`, then stops reading when `stall` is called. */
function rawStream(key: string) {
  const u = new URL(ready.url);
  const socket = tls.connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false });
  let text = '';
  let closed = false;
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    text += d;
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    closed = true;
  });
  socket.write(`GET /api/v1/events HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  return {
    text: () => text,
    isClosed: () => closed,
    stall: () => socket.pause(),
    destroy: () => socket.destroy(),
    async until(pred: (t: string) => boolean, ms: number, what: string) {
      await pollUntil({ what, read: () => text, until: pred, timeoutMs: ms, intervalMs: 20 });
    },
  };
}

/** Runs `fn` on every item, 20 at a time. */
async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += 20) await Promise.all(items.slice(i, i + 20).map(fn));
}

async function slowDrops(): Promise<number> {
  const m = await curl(['-sS', '--cacert', caFile, `${ready.url}/metrics`]);
  const hit = /tunnel_relay_events_streams_ended_total\{reason="slow"\} (\d+)/.exec(m.stdout);
  return Number(hit?.[1] ?? 'NaN');
}

beforeAll(async () => {
  buildIfStale();
  const dir = tempDir('abuse-events-');
  // The changes that overflow the slow consumers' queues are the admin key's writes: past its default write budget.
  ({ proc: relay, ready } = await startServe(dir, '127.0.0.1:0', ['--write-budget', '1000000']));
  adminKey = ready.adminKey ?? '';
  caFile = join(dir, 'tls', 'cert.pem');
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

describe('events feed abuse', () => {
  it('caps streams per key (429) and in all (503 AT_CAPACITY); closed slots come back', async () => {
    const keys = await Promise.all(Array.from({ length: MAX_STREAMS / PER_KEY }, () => viewerKey()));
    const streams = keys.flatMap((k) => Array.from({ length: PER_KEY }, () => rawStream(k)));
    try {
      for (const s of streams) await s.until((t) => t.includes('event: ready'), 30_000, 'ready');
      const over = await call('GET', '/api/v1/events', undefined, await viewerKey());
      expect(over.status).toBe(503);
      expect(over.body).toMatchObject({ error: { code: 'AT_CAPACITY' } });
      streams.pop()?.destroy();
      const again = rawStream(await viewerKey());
      streams.push(again);
      await again.until((t) => t.includes('event: ready'), 10_000, 'ready once a slot freed');
    } finally {
      for (const s of streams) s.destroy();
    }
  }, 90_000);

  it('drops consumers that stop reading; one that reads sees every cluster change and stays open', async () => {
    // 20 claims of ~1 KB make each view ~22 KB: 100 such clusters changing fill the queue (one entry per
    // cluster) past 2 MiB once the socket buffers are full.
    const claims = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`claim-${i}`, 'x'.repeat(1000)]));
    const names = Array.from({ length: FAT_CLUSTERS }, (_, i) => `fat-${i}`);
    await inBatches(names, async (name) => {
      const created = await call('POST', '/api/v1/clusters', { name });
      const psk = String((created.body.bootstrap as { psk: string }).psk);
      const publicKey = keyToBase64(generateKeyPair().publicKey);
      const body = { cluster: name, publicKey, agentVersion: '0.1.0', claims };
      const reg = await call('POST', '/api/v1/register', body, psk);
      expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    });

    const healthy = new EventCurl({ url: ready.url, key: await viewerKey(), caFile });
    const slow = await Promise.all(
      Array.from({ length: abuseScale() }, async () => rawStream(await viewerKey())),
    );
    const dropsBefore = await slowDrops();
    try {
      await healthy.waitFor((e) => e.event === 'ready', 30_000, 'ready');
      for (const s of slow) {
        await s.until((t) => t.includes('event: ready'), 30_000, 'ready');
        s.stall();
      }
      let rounds = 0;
      while ((await slowDrops()) < dropsBefore + slow.length) {
        // Dropped once the queue is over 2 MiB and the socket has not drained for 5 s (SLOW_GRACE_MS).
        expect(rounds++, 'stalled consumers still open after 40 rounds of changes').toBeLessThan(40);
        await inBatches(names, (name) => call('PUT', `/api/v1/clusters/${name}/values`, { round: rounds }));
        await sleep(500);
      }
      console.log(`events abuse: ${slow.length} stalled consumer(s) dropped after ${rounds} round(s)`);
      const from = healthy.events.length;
      await inBatches(names, (name) => call('DELETE', `/api/v1/clusters/${name}`));
      await healthy.waitFor(
        () => healthy.events.slice(from).filter((e) => e.event === 'cluster-deleted').length === names.length,
        30_000,
        `the ${names.length} deletions on the reading stream`,
      );
      expect(healthy.stderr).toBe('');
      expect(await Promise.race([healthy.exited.then(() => 'ended'), sleep(100).then(() => 'open')])).toBe(
        'open',
      );
      expect(slow.every((s) => !s.text().includes('cluster-deleted'))).toBe(true);
    } finally {
      healthy.stop();
      for (const s of slow) s.destroy();
    }
  }, 120_000);
});
