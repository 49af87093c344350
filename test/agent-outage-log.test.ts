/**
 * A relay outage as the agent logs it, with real processes: the relay is killed, its port then answers every
 * connection by closing it (a broken relay or load balancer: the worst case for a retry loop, since each attempt
 * fails at once), then the relay is started again on the same port and data dir. The agent's log has one "lost" line
 * and one "back" line and nothing per retry in between, and its reconnect attempts (the connections the port saw)
 * are spaced as shared/net/derp/backoff.ts says: never closer than the first wait, each gap at least the one before
 * (exponential, [e/2, e] jitter), none beyond the cap.
 */
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { DEFAULT_BACKOFF } from '../shared/net/derp/backoff.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let agent: Proc;

beforeAll(async () => {
  buildIfStale();
  dataDir = join(tempDir('outage-log-'), 'relay');
  ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
  const env = adminEnvOf(ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-out', '-o', 'json'], env);
  expect(created.code, created.stderr).toBe(0);
  const stateDir = join(tempDir('outage-log-agent-'), 's');
  const words = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const joined = await run(
    CLIENT_BIN,
    [...words, '--upstream', 'http://127.0.0.1:9', '--state-dir', stateDir, '--wait'],
    cleanEnv(),
    45_000,
  );
  expect(joined.code, joined.stderr).toBe(0);
  agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  await waitConnected(env, 'edge-out', 30_000);
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  await relay?.stop();
  await cleanup();
});

/** Holds `port`, closing every connection at once; records when each arrived. */
async function brokenRelay(port: number): Promise<{ arrivals: number[]; close: () => Promise<void> }> {
  const arrivals: number[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    arrivals.push(performance.now());
    s.destroy();
  });
  server.on('connection', (s) => sockets.add(s));
  // The killed relay's port can take a moment to be free.
  for (let i = 0; ; i++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      break;
    } catch (err) {
      if (i > 50) throw err;
      await sleep(20);
    }
  }
  return { arrivals, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('a relay outage in the agent log', () => {
  it('one lost line, one back line, reconnect attempts backed off', async () => {
    const port = Number(new URL(ready.url).port);
    const logBefore = agent.stderr.length;
    relay.child.kill('SIGKILL');
    await relay.exited;
    const broken = await brokenRelay(port);
    await sleep(9_000);
    await broken.close();
    ({ proc: relay } = await startServe(dataDir, `127.0.0.1:${port}`));
    await agent.waitFor(
      (p) => /relay connection back/.test(p.stderr.slice(logBefore)),
      40_000,
      'the back line',
    );
    await waitConnected(adminEnvOf(ready), 'edge-out', 30_000);

    const lines = agent.stderr.slice(logBefore).split('\n').filter(Boolean);
    expect(lines.filter((l) => /relay connection lost/.test(l))).toHaveLength(1);
    expect(
      lines.filter((l) => /relay connection back after [\d.]+s and \d+ failed attempts/.test(l)),
    ).toHaveLength(1);
    // Nothing per retry: the outage is at most these two lines plus one for a lease renewal that failed meanwhile.
    expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(4);

    const gaps = broken.arrivals.slice(1).map((t, i) => t - broken.arrivals[i]!);
    expect(broken.arrivals.length, `gaps ${gaps.map(Math.round)}`).toBeGreaterThanOrEqual(3);
    // 9 s of attempts that fail at once: 0.25-0.5, 0.5-1, 1-2, 2-4, 4-8 s waits fit at most ~7 attempts.
    expect(broken.arrivals.length, `gaps ${gaps.map(Math.round)}`).toBeLessThanOrEqual(8);
    const slack = 150; // scheduling on a loaded machine
    for (const [i, gap] of gaps.entries()) {
      expect(gap).toBeGreaterThanOrEqual(DEFAULT_BACKOFF.baseMs / 2 - slack);
      expect(gap).toBeLessThanOrEqual(DEFAULT_BACKOFF.maxMs + slack);
      if (i > 0) expect(gap, `gaps ${gaps.map(Math.round)}`).toBeGreaterThanOrEqual(gaps[i - 1]! - slack);
    }
  }, 120_000);
});
