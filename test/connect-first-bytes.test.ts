/**
 * A CONNECT whose client sends its first request bytes right behind the CONNECT head (before the relay's 200),
 * through the real relay and agent: the bytes travel with the stream open (no round trip to the agent before
 * they leave) and reach the upstream in order; a refused target still answers 502 and the bytes reach nothing.
 */
import { once } from 'node:events';
import http from 'node:http';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Proc, RELAY_BIN, run, waitConnected } from './cli-harness.js';
import { startAgentFromJoinCommand } from './helpers/joined-agent.js';
import { serveForFile } from './helpers/served-relay.js';
import { listen } from './proxy-fixtures.js';

const relay = serveForFile({ prefix: 'connect-first' });
let agent: Proc | undefined;
let upstream: http.Server;
let upPort: number;
const seen: string[] = [];

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.end(`you asked for ${req.url}`);
  });
  upPort = await listen(upstream);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge', '--output', 'json'], relay.adminEnv);
  expect(created.code, created.stderr).toBe(0);
  agent = await startAgentFromJoinCommand({
    joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand,
    upstream: `http://127.0.0.1:${upPort}`,
    prefix: 'connect-first-agent',
  });
  await waitConnected(relay.adminEnv, 'edge');
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  upstream?.close();
});

/** CONNECT to `target` and a GET of `path` in one write; resolves with everything the relay sent back. */
async function pipelined(target: string, path: string): Promise<string> {
  const u = new URL(relay.ready.url);
  const c = tls.connect({ host: u.hostname, port: Number(u.port), ca: relay.caPem, servername: 'localhost' });
  c.on('error', () => {});
  await once(c, 'secureConnect');
  let got = '';
  c.on('data', (d: Buffer) => {
    got += d.toString('latin1');
  });
  c.write(
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${relay.ready.adminKey}\r\n\r\n` +
      `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  );
  await Promise.race([
    once(c, 'close'),
    new Promise((_, reject) => setTimeout(() => reject(new Error('no end in 15 s')), 15_000).unref()),
  ]);
  return got;
}

describe('CONNECT with the first request bytes right behind it', () => {
  it('carries them with the stream open to the upstream', async () => {
    const got = await pipelined(`edge.clusters.local:${upPort}`, '/first-bytes');
    expect(got.startsWith('HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK\r\n')).toBe(true);
    expect(got.endsWith('you asked for /first-bytes')).toBe(true);
    expect(seen).toContain('/first-bytes');
  });

  it('answers 502 for a port the agent refuses, and the bytes reach no upstream', async () => {
    const before = seen.length;
    const got = await pipelined(`edge.clusters.local:${upPort + 1}`, '/refused');
    expect(got.split('\r\n')[0]).toBe('HTTP/1.1 502 Bad Gateway');
    expect(got).toContain('STREAM_REFUSED');
    expect(seen.length).toBe(before);
  });
});
