/**
 * Path-proxy requests without a body through the real relay and agent, whose request head travels with the stream
 * open (relay/data/proxy/open-on-first-write.ts): GET and HEAD reach the upstream once and answer as before, a
 * POST with a body still streams, a cluster with no agent answers 503 and an upstream the agent cannot reach 502,
 * each with its stable code as the Status's first cause, and the refused request reaches no upstream.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Proc, RELAY_BIN, run, waitConnected } from './cli-harness.js';
import { startAgentFromJoinCommand } from './helpers/joined-agent.js';
import { serveForFile } from './helpers/served-relay.js';
import { listen } from './proxy-fixtures.js';

const relay = serveForFile({ prefix: 'path-first' });
let agent: Proc | undefined;
let upstream: http.Server;
const seen: string[] = [];

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (req.url === '/echo') return void req.pipe(res);
    res.end(`you asked for ${req.url}`);
  });
  const upPort = await listen(upstream);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge', '--output', 'json'], relay.adminEnv);
  expect(created.code, created.stderr).toBe(0);
  agent = await startAgentFromJoinCommand({
    joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand,
    upstream: `http://127.0.0.1:${upPort}`,
    prefix: 'path-first-agent',
  });
  await waitConnected(relay.adminEnv, 'edge');
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  upstream?.close();
});

/** A request through the path proxy on a new TLS connection; resolves with the status and the body. */
function proxied(
  cluster: string,
  path: string,
  o: { method?: string; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${relay.ready.url}/api/v1/clusters/${cluster}/proxy${path}`,
      {
        method: o.method ?? 'GET',
        ca: relay.caPem,
        servername: 'localhost',
        agent: false,
        timeout: 15_000,
        headers: { authorization: `Bearer ${relay.ready.adminKey}` },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer to ${path} in 15 s`)));
    req.on('error', reject);
    req.end(o.body);
  });
}

const firstCause = (body: string): string => JSON.parse(body).details.causes[0].reason;

describe('path proxy: the request head with the stream open', () => {
  it('GET and HEAD reach the upstream once each and answer', async () => {
    const g = await proxied('edge', '/with-the-open?x=1');
    expect(g).toEqual({ status: 200, body: 'you asked for /with-the-open?x=1' });
    const h = await proxied('edge', '/head-only', { method: 'HEAD' });
    expect(h).toEqual({ status: 200, body: '' });
    expect(seen.filter((s) => s === 'GET /with-the-open?x=1')).toHaveLength(1);
    expect(seen.filter((s) => s === 'HEAD /head-only')).toHaveLength(1);
  });

  it('a POST with a body still streams it to the upstream', async () => {
    const p = await proxied('edge', '/echo', { method: 'POST', body: 'b'.repeat(100_000) });
    expect(p.status).toBe(200);
    expect(p.body).toBe('b'.repeat(100_000));
  });

  it('a cluster with no agent answers 503 AGENT_NOT_CONNECTED', async () => {
    const created = await relay.admin('cluster', 'create', 'lonely', '--output', 'json');
    expect(created.code, created.stderr).toBe(0);
    const r = await proxied('lonely', '/nobody');
    expect(r.status).toBe(503);
    expect(firstCause(r.body)).toBe('AGENT_NOT_CONNECTED');
  });

  it('an upstream the agent cannot reach answers 502 UPSTREAM_FAILED; nothing reaches an upstream', async () => {
    const port = (upstream.address() as AddressInfo).port;
    const closed = new Promise<void>((r) => upstream.close(() => r()));
    upstream.closeAllConnections();
    await closed;
    const before = seen.length;
    const r = await proxied('edge', '/after-close');
    expect(r.status).toBe(502);
    expect(firstCause(r.body)).toBe('UPSTREAM_FAILED');
    expect(r.body).toContain(`127.0.0.1:${port}`);
    expect(seen.length).toBe(before);
  });
});
