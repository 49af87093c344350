/**
 * The data plane through the real binaries: `tunnel-relay serve` (DERP at /derp and the hub node mounted)
 * and `tunnel-client join --wait` / `run` / `status`. The WireGuard session comes up over the relay, comes
 * back after kill -9 of the agent and after a relay restart (same data dir and port) without operator
 * action, and a deleted cluster's agent is disconnected at once and stays refused.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  okJson,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  buildIfStale();
  dataDir = tempDir('session-cli-relay-');
  const started = await startServe(dataDir, '127.0.0.1:0');
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv(), 40_000);

interface ClusterView {
  connected: boolean;
  path: string;
  lastHandshake: string | null;
  rttMs: number | null;
  bytesIn: number;
  bytesOut: number;
}

interface StatusReport extends ClusterView {
  status: string;
  agentRunning: boolean;
}

const getCluster = async (name: string) =>
  okJson<ClusterView>(await admin('cluster', 'get', name, '--output', 'json'));
const getStatus = async (stateDir: string) =>
  okJson<StatusReport>(await client('status', '--state-dir', stateDir, '--output', 'json'));

/** Reads `get` every 200 ms (a read that fails, e.g. while the relay restarts, is "not yet") until `pred` holds. */
async function until<T>(
  what: string,
  get: () => Promise<T>,
  pred: (v: T) => boolean,
  ms: number,
): Promise<T> {
  return (await pollUntil({ what, read: get, until: pred, timeoutMs: ms, intervalMs: 200 })).value;
}

async function joinCluster(name: string): Promise<string> {
  const created = okJson<{ bootstrap: { joinCommand: string } }>(
    await admin('cluster', 'create', name, '--output', 'json'),
  );
  const stateDir = join(tempDir('session-cli-agent-'), 'state');
  const args = joinCommandWords(created.bootstrap.joinCommand);
  const r = await client(...args, '--state-dir', stateDir, '--wait', '--output', 'json');
  expect(okJson<{ status: string }>(r).status).toBe('Accepted');
  return stateDir;
}

describe('WireGuard session over the relay, real processes', () => {
  let stateDir: string;
  let agent: Proc;

  it('join --wait returns once the session is up; run keeps it; status and the cluster API show it', async () => {
    stateDir = await joinCluster('edge-1');
    // join --wait returned after a completed handshake, which the hub recorded.
    const afterJoin = await getCluster('edge-1');
    expect(afterJoin.lastHandshake).not.toBeNull();
    expect(afterJoin.bytesIn).toBeGreaterThan(0);

    agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    const st = await until(
      'status connected',
      () => getStatus(stateDir),
      (s) => s.connected,
      15_000,
    );
    expect(st).toMatchObject({ status: 'Accepted', agentRunning: true, path: 'relayed' });
    expect(st.lastHandshake).not.toBeNull();
    expect(st.bytesOut).toBeGreaterThan(0);
    const c = await until(
      'cluster connected',
      () => getCluster('edge-1'),
      (v) => v.connected,
      10_000,
    );
    expect(c.path).toBe('relayed');
    expect(Date.parse(c.lastHandshake ?? '')).toBeGreaterThanOrEqual(
      Date.parse(afterJoin.lastHandshake ?? ''),
    );
    const file = JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as { pid: number };
    expect(file.pid).toBe(agent.child.pid);
  }, 60_000);

  it('kill -9 the agent and run it again: the session is back within 10 s', async () => {
    const before = await getCluster('edge-1');
    expect(await agent.stop('SIGKILL')).not.toBe(0);
    agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    const st = await until(
      'status connected after restart',
      () => getStatus(stateDir),
      (s) => s.connected && s.agentRunning && s.lastHandshake !== null,
      10_000,
    );
    expect(st.path).toBe('relayed');
    const c = await until(
      'a new handshake at the hub',
      () => getCluster('edge-1'),
      (v) => v.connected && (v.lastHandshake ?? '') > (before.lastHandshake ?? ''),
      10_000,
    );
    expect(c.path).toBe('relayed');
  }, 40_000);

  it('restart the relay (SIGTERM, same data dir and port): the session is back within 10 s', async () => {
    const port = new URL(ready.url).port;
    expect(await relay.stop('SIGTERM')).toBe(0);
    await until(
      'status disconnected',
      () => getStatus(stateDir),
      (s) => !s.connected,
      15_000,
    );
    const restarted = await startServe(dataDir, `127.0.0.1:${port}`);
    relay = restarted.proc;
    expect(restarted.ready.caPin).toBe(ready.caPin);
    const c = await until(
      'cluster connected after restart',
      () => getCluster('edge-1'),
      (v) => v.connected,
      10_000,
    );
    expect(c.path).toBe('relayed');
    expect(c.lastHandshake).not.toBeNull();
    const st = await until(
      'status connected',
      () => getStatus(stateDir),
      (s) => s.connected,
      10_000,
    );
    expect(st.path).toBe('relayed');
  }, 60_000);

  it('deleting the cluster disconnects the agent at once, and the agent stops at once saying so', async () => {
    expect((await admin('cluster', 'delete', 'edge-1')).code).toBe(0);
    const st = await until(
      'status disconnected',
      () => getStatus(stateDir),
      (s) => !s.connected,
      3_000,
    );
    expect(st.path).toBe('none');
    // The relay closed its relay connection as revoked: the agent asked its registration at once.
    const code = await Promise.race([agent.exited, sleep(5_000).then(() => 'still running')]);
    expect(code).toBe(1);
    expect(agent.stderr).toMatch(/error UNAUTHENTICATED: .*cluster edge-1 was deleted/);
    expect((await getStatus(stateDir)).connected).toBe(false);
  }, 40_000);
});
