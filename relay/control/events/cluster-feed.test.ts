/**
 * The feed's changes that no request makes, on an in-process relay with a fake clock read over a real socket:
 * a lease going stale turns Available Unknown, an unused PSK turns expired at its expiry, a connection report
 * sends an event only when more than the traffic counters changed.
 */

import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair, keyToBase64 } from '../../../shared/keys.js';
import { type SseEvent, SseParser } from '../../../shared/kit/http/sse-parser.js';
import { startTestRelay, type TestRelay } from '../../../test/helpers/test-relay.js';
import { waitFor } from '../../../test/helpers/wait.js';

let t: TestRelay;
let clock: FakeClock;
let adminKey: string;

interface Feed {
  events: SseEvent[];
  close(): void;
}

async function openFeed(): Promise<Feed> {
  const controller = new AbortController();
  const res = await request(`${t.relay.url}/api/v1/events`, {
    headers: { authorization: `Bearer ${adminKey}` },
    dispatcher: t.agent,
    signal: controller.signal,
  });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
  const feed: Feed = { events: [], close: () => controller.abort() };
  const parser = new SseParser();
  res.body.on('data', (chunk: Buffer) => feed.events.push(...parser.push(chunk.toString('utf8'))));
  res.body.on('error', () => {});
  return feed;
}

const until = (pred: () => boolean, what: string) => waitFor(pred, 5_000, what);

/** The views of `name` the feed sent from event index `from` on. */
function views(feed: Feed, name: string, from = 0) {
  return feed.events
    .slice(from)
    .filter((e) => e.event === 'cluster')
    .map((e) => JSON.parse(e.data))
    .filter((c) => c.name === name);
}

beforeEach(async () => {
  clock = new FakeClock();
  t = await startTestRelay({ clock, flags: { leaseDuration: 10 } });
  adminKey = t.relay.adminKey ?? '';
});

afterEach(async () => {
  await t.cleanup();
});

describe('cluster feed', () => {
  it('turns Available Unknown when the lease goes stale, with no request', async () => {
    const created = await t.call('POST', '/api/v1/clusters', { token: adminKey, body: { name: 'leased' } });
    const reg = await t.call('POST', '/api/v1/register', {
      token: created.body.bootstrap.psk,
      body: { cluster: 'leased', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
    });
    expect(reg.status).toBe(201);
    const renewed = await t.call('POST', '/api/v1/agent/lease', {
      token: reg.body.agentCredential,
      body: {},
    });
    expect(renewed.status).toBe(200);
    const feed = await openFeed();
    try {
      await until(() => feed.events.some((e) => e.event === 'ready'), 'ready');
      const available = (c: { conditions: Array<{ type: string; status: string }> }) =>
        c.conditions.find((x) => x.type === 'Available')?.status;
      expect(views(feed, 'leased').map(available)).toEqual(['True']);
      const from = feed.events.length;
      clock.advance(29_000); // grace = 3 x 10 s: still fresh
      await new Promise((r) => setTimeout(r, 100));
      expect(views(feed, 'leased', from)).toEqual([]);
      clock.advance(2_000);
      await until(() => views(feed, 'leased', from).length > 0, 'the stale lease event');
      expect(views(feed, 'leased', from).map(available)).toEqual(['Unknown']);
    } finally {
      feed.close();
    }
  });

  it('turns an unused PSK expired at its expiry', async () => {
    await t.call('POST', '/api/v1/clusters', { token: adminKey, body: { name: 'waiting', pskTtl: '1m' } });
    const feed = await openFeed();
    try {
      await until(() => feed.events.some((e) => e.event === 'ready'), 'ready');
      expect(views(feed, 'waiting')[0].bootstrapPsk.state).toBe('unused');
      const from = feed.events.length;
      clock.advance(61_000);
      await until(() => views(feed, 'waiting', from).length > 0, 'the PSK expiry event');
      expect(views(feed, 'waiting', from).map((c) => c.bootstrapPsk.state)).toEqual(['expired']);
    } finally {
      feed.close();
    }
  });

  it('sends a connection report only when more than the traffic counters changed', async () => {
    await t.call('POST', '/api/v1/clusters', { token: adminKey, body: { name: 'live' } });
    const feed = await openFeed();
    try {
      await until(() => feed.events.some((e) => e.event === 'ready'), 'ready');
      const from = feed.events.length;
      t.relay.hooks.updateConnection('live', { bytesIn: 100, bytesOut: 50, rttMs: 3 });
      await new Promise((r) => setTimeout(r, 100));
      expect(views(feed, 'live', from)).toEqual([]);
      t.relay.hooks.updateConnection('live', { connected: true, path: 'relayed', bytesIn: 200 });
      await until(() => views(feed, 'live', from).length > 0, 'the connection event');
      expect(views(feed, 'live', from)).toMatchObject([{ connected: true, path: 'relayed', bytesIn: 200 }]);
    } finally {
      feed.close();
    }
  });
});
