/**
 * Attack replay: agent values nested far deeper than any configuration needs. Before the depth cap a
 * cluster's values 1,000 levels deep were stored, and from then on the agent-facing
 * `GET /clusters/NAME` answered 500 (the YAML writer overflowed its stack) and the agent retried
 * `values: INTERNAL` forever; 5,000 levels made the PUT itself a 500. Now both PUT routes answer 400
 * VALUES_TOO_DEEP naming the limit and the path, and a row already stored too deep (written by an
 * older build) is served as {} with a warning instead of a 500. Through the real `tunnel-relay serve`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_VALUES_DEPTH } from '../../relay/control/model/values-limits.js';
import { buildIfStale, cleanup, type Proc, type ReadyLine, startServe, tempDir } from '../cli-harness.js';
import { abuseRuns } from './scale.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminKey: string;
let tls: Agent;

async function startRelay(): Promise<void> {
  const started = await startServe(dataDir, '127.0.0.1:0');
  relay = started.proc;
  ready = started.ready;
  tls?.close();
  tls = new Agent({ connect: { ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8') } });
}

beforeAll(async () => {
  buildIfStale();
  dataDir = tempDir('abuse-values-');
  await startRelay();
  adminKey = ready.adminKey ?? '';
  expect(adminKey).toMatch(/^trk_/);
}, 120_000);

afterAll(async () => {
  await relay?.stop();
  await tls?.close();
  await cleanup();
});

async function call(method: 'GET' | 'PUT' | 'POST', path: string, body?: string) {
  const r = await request(`${ready.url}${path}`, {
    method,
    dispatcher: tls,
    headers: {
      authorization: `Bearer ${adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  return { status: r.statusCode, text: await r.body.text() };
}

/** A document nested `levels` containers deep under `x`, as text (JSON.stringify overflows first). */
function nested(levels: number, key: string, lists: boolean): string {
  const open = lists ? '[' : `{${JSON.stringify(key)}:`;
  const close = lists ? ']' : '}';
  return `{"x":${open.repeat(levels - 1)}1${close.repeat(levels - 1)}}`;
}

describe('values nested past the depth cap, real relay', () => {
  const good = { image: { repo: 'r', tag: '1' }, list: [1, 2] };

  it('both PUT routes answer 400 VALUES_TOO_DEEP naming the limit and the path; GETs keep answering', async () => {
    expect((await call('POST', '/api/v1/clusters', JSON.stringify({ name: 'deep' }))).status).toBe(201);
    expect((await call('PUT', '/api/v1/clusters/deep/values', JSON.stringify(good))).status).toBe(200);
    // Exactly at the cap is accepted and served.
    const atCap = nested(MAX_VALUES_DEPTH, 'k', false);
    expect((await call('PUT', '/api/v1/values', atCap)).status).toBe(200);
    const samples = fc.sample(
      fc.record({
        // 1,000 and 5,000 are the depths of the report; bodies stay under the 64 KiB body limit.
        levels: fc.oneof(
          fc.constantFrom(MAX_VALUES_DEPTH + 1, 1_000, 5_000),
          fc.integer({ min: MAX_VALUES_DEPTH + 1, max: 9_000 }),
        ),
        key: fc.constantFrom('a', 'b c', 'k.y'),
        lists: fc.boolean(),
        route: fc.constantFrom('/api/v1/values', '/api/v1/clusters/deep/values'),
      }),
      abuseRuns(6),
    );
    for (const s of samples) {
      // Keep the body under the 64 KiB body limit whatever the key (a wider key costs more per level).
      const perLevel = s.lists ? 2 : JSON.stringify(s.key).length + 3;
      const levels = Math.min(s.levels, Math.floor(60_000 / perLevel));
      const r = await call('PUT', s.route, nested(levels, s.key, s.lists));
      expect(r.status, `${JSON.stringify(s)}: ${r.text}`).toBe(400);
      const err = JSON.parse(r.text).error as { code: string; message: string };
      expect(err.code).toBe('VALUES_TOO_DEEP');
      expect(err.message).toContain(`deeper than ${MAX_VALUES_DEPTH} levels`);
      expect(err.message).toMatch(/^values\.x[.[]/);
    }
    const yaml = await call('GET', '/clusters/deep');
    expect(yaml.status).toBe(200);
    expect(yaml.text).toContain('tag: "1"');
    const own = await call('GET', '/api/v1/clusters/deep/values');
    expect(JSON.parse(own.text)).toEqual(good);
  });

  it('a row stored too deep by an older build is served as {} with a warning, never a 500', async () => {
    await relay.stop();
    const db = new Database(join(dataDir, 'relay.db'));
    try {
      db.prepare('UPDATE clusters SET values_json = ? WHERE name = ?').run(nested(1_000, 'a', false), 'deep');
      db.prepare("UPDATE meta SET value = ? WHERE key = 'platform-values'").run(nested(20_000, 'a', true));
    } finally {
      db.close();
    }
    await startRelay();
    for (let i = 0; i < abuseRuns(2); i++) {
      const yaml = await call('GET', '/clusters/deep');
      expect(yaml.status, yaml.text).toBe(200);
      expect(yaml.text).toBe('{}\n');
      for (const path of ['/api/v1/clusters/deep/values', '/api/v1/values']) {
        const r = await call('GET', path);
        expect(r.status, r.text).toBe(200);
        expect(JSON.parse(r.text)).toEqual({});
      }
    }
    const warnings = relay.stderr
      .split('\n')
      .filter((l) => l.includes('"code":"VALUES_TOO_DEEP"'))
      .map((l) => JSON.parse(l) as { row: string; msg: string });
    expect(warnings.map((w) => w.row)).toEqual(
      expect.arrayContaining(['values of cluster deep', 'platform values']),
    );
    expect(warnings[0]?.msg).toContain(`deeper than ${MAX_VALUES_DEPTH} levels`);
    // A good document written over it is served again.
    expect((await call('PUT', '/api/v1/clusters/deep/values', JSON.stringify(good))).status).toBe(200);
    expect((await call('GET', '/clusters/deep')).text).toContain('repo: r');
  });
});
