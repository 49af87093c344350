/**
 * What agents do, in the logs of the real binaries at the default level, once per change: the relay logs an agent
 * connected (relayed, with the reason), went direct, disconnected, and a hub request answered 502/503; the agent logs
 * its session up (relayed, with the reason) and that it went direct, each once, and not again over the next 35 s
 * (the liveness probe every 30 s no longer records a path switch: "path switched" keeps its time). An agent joined
 * with `--egress 443-only` says it sends no UDP and why it is relayed. Both sides write the same timestamp: ISO 8601
 * in UTC to the millisecond.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  freeUdpPort,
  okJson,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let relay: Proc;
let ready: ReadyLine;
let adminEnv: NodeJS.ProcessEnv;
let udpPort: number;

beforeAll(async () => {
  buildIfStale();
  udpPort = await freeUdpPort();
  const started = await startServe(join(tempDir('agent-logs-'), 'relay'), '127.0.0.1:0', [
    '--udp-port',
    String(udpPort),
    '--lease-duration',
    '10',
  ]);
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

interface RelayLine {
  time: string;
  msg: string;
  cluster?: string;
  path?: string;
  reason?: string | null;
  remote?: string | null;
  status?: number;
  code?: string;
}

/** The relay's JSON log lines about `cluster` (its stderr is not a terminal: JSON). */
function relayLines(cluster: string): RelayLine[] {
  return relay.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as RelayLine)
    .filter((l) => l.cluster === cluster);
}

const msgs = (cluster: string) => relayLines(cluster).map((l) => l.msg);

async function joinAndRun(name: string, extra: string[] = []): Promise<{ stateDir: string; agent: Proc }> {
  const created = okJson<{ bootstrap: { joinCommand: string } }>(
    await run(RELAY_BIN, ['cluster', 'create', name, '--output', 'json'], adminEnv),
  );
  const stateDir = join(tempDir('agent-logs-agent-'), 'state');
  const args = joinCommandWords(created.bootstrap.joinCommand);
  const joined = await run(
    CLIENT_BIN,
    [...args, '--state-dir', stateDir, ...extra, '--wait'],
    cleanEnv(),
    40_000,
  );
  expect(joined.code, joined.stderr).toBe(0);
  const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  return { stateDir, agent };
}

async function pathSwitched(stateDir: string): Promise<string | null> {
  const r = await run(CLIENT_BIN, ['status', '--state-dir', stateDir, '--output', 'json'], cleanEnv());
  return okJson<{ pathDetail: { lastSwitch: string | null } | null }>(r).pathDetail?.lastSwitch ?? null;
}

describe('logs that tell what agents do', () => {
  it('connect, direct and disconnect once each on both sides; no switch every 30 s; a 502/503 is logged', async () => {
    const { stateDir, agent } = await joinAndRun('logs-1');
    try {
      await agent.waitFor((p) => p.stderr.includes('path: direct to the hub at'), 30_000, 'agent direct');
      const directAtRelay = () =>
        relayLines('logs-1').some((l) => l.msg.startsWith('agent ') && l.path === 'direct');
      await relay.waitFor(directAtRelay, 15_000, 'relay: direct');
      // The hub may see the agent direct by its first report: connected (direct), else connected then went direct.
      const connected = relayLines('logs-1').find((l) => l.msg === 'agent connected');
      if (connected?.path === 'relayed') expect(typeof connected.reason).toBe('string');
      expect(relayLines('logs-1').find((l) => l.path === 'direct')?.remote).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(agent.stderr).toMatch(/WireGuard session to the hub is up \(relayed/);
      expect(agent.stderr).toContain(`path: direct to the hub at 127.0.0.1:${udpPort}`);
      const switched = await pathSwitched(stateDir);
      expect(switched).not.toBeNull();
      await sleep(35_000); // past the agent's liveness probe (30 s) and the idle ping pace (25 s)
      expect(await pathSwitched(stateDir)).toBe(switched);
      const agentLines = msgs('logs-1').filter((m) => m.startsWith('agent '));
      expect([['agent connected'], ['agent connected', 'agent went direct']]).toContainEqual(agentLines);
      expect(agent.stderr.match(/path: /g)).toHaveLength(1);
      for (const line of agent.stderr.trim().split('\n')) expect(line.split(' ')[0]).toMatch(ISO);
      for (const line of relayLines('logs-1')) expect(line.time).toMatch(ISO);
    } finally {
      await agent.stop();
    }
    await relay.waitFor(() => msgs('logs-1').includes('agent disconnected'), 15_000, 'relay: disconnected');
    const proxied = await curl([
      '-sS',
      '-k',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `Authorization: Bearer ${ready.adminKey}`,
      `${ready.url}/api/v1/clusters/logs-1/proxy/api`,
    ]);
    expect(['502', '503']).toContain(proxied.stdout);
    await relay.waitFor(
      () => msgs('logs-1').some((m) => m.startsWith('hub request failed')),
      5_000,
      '503 line',
    );
    const failed = relayLines('logs-1').find((l) => l.msg.startsWith('hub request failed'));
    expect(failed?.status).toBe(Number(proxied.stdout));
    expect(failed?.code).toMatch(/^[A-Z_]+$/);
  }, 150_000);

  it('--egress 443-only: no UDP in the start line; relayed with the reason on both sides', async () => {
    const { agent } = await joinAndRun('logs-443', ['--egress', '443-only']);
    try {
      await agent.waitFor((p) => p.stderr.includes('session to the hub is up'), 30_000, 'session up');
      expect(agent.stderr).toContain('no UDP (--egress 443-only)');
      expect(agent.stderr).not.toContain('UDP via');
      expect(agent.stderr).toContain('WireGuard session to the hub is up (relayed: 443-only (');
      await relay.waitFor(
        () => relayLines('logs-443').some((l) => l.path === 'relayed' && l.reason === '443-only'),
        20_000,
        'relay: connected, 443-only',
      );
    } finally {
      await agent.stop();
    }
  }, 90_000);
});
