/**
 * The direct path through the real binaries on loopback: `tunnel-relay serve` with its UDP port and STUN
 * responder on, `tunnel-client join` / `run` / `status`. The agent finds the hub's UDP port (disco over the
 * relay, probes over UDP) and its session moves there (status and the cluster API say `direct`, the hub's
 * UDP port counts authenticated datagrams); the cluster's `path: relay-only` value moves it back to the relay
 * without a restart, `auto` lets it go direct again; an agent joined with `--egress 443-only` stays relayed
 * and sends the hub's UDP port nothing.
 */
import { writeFileSync } from 'node:fs';
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
import { pollUntil } from './helpers/wait.js';

let relay: Proc;
let ready: ReadyLine;
let adminEnv: NodeJS.ProcessEnv;
let udpPort: number;
let relayCaFile: string;
const agents: Proc[] = [];

beforeAll(async () => {
  buildIfStale();
  const dir = tempDir('direct-cli-');
  udpPort = await freeUdpPort();
  const started = await startServe(join(dir, 'relay'), '127.0.0.1:0', [
    '--udp-port',
    String(udpPort),
    '--stun-port',
    String(await freeUdpPort()),
    '--lease-duration',
    '10',
  ]);
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop();
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv(), 40_000);

interface StatusReport {
  connected: boolean;
  path: string;
  pathDetail: { remote: string | null; reason: string | null; rttRelayedMs: number | null } | null;
}

const getStatus = async (stateDir: string) =>
  okJson<StatusReport>(await client('status', '--state-dir', stateDir, '--output', 'json'));
const getCluster = async (name: string) =>
  okJson<{ connected: boolean; path: string }>(await admin('cluster', 'get', name, '--output', 'json'));

async function until<T>(
  what: string,
  get: () => Promise<T>,
  pred: (v: T) => boolean,
  ms: number,
): Promise<T> {
  return (await pollUntil({ what, read: get, until: pred, timeoutMs: ms, intervalMs: 250 })).value;
}

async function udpReceived(): Promise<number> {
  if (!relayCaFile) {
    const k = okJson<{ clusters: { cluster: Record<string, string> }[] }>(
      await admin('kubeconfig', 'edge-1', '--output', 'json'),
    );
    relayCaFile = join(tempDir('direct-cli-ca-'), 'relay-ca.pem');
    writeFileSync(
      relayCaFile,
      Buffer.from(k.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64'),
    );
  }
  const r = await curl(['-sS', '-f', '--cacert', relayCaFile, `${ready.url}/metrics`]);
  const line = r.stdout.split('\n').find((l) => l.startsWith('tunnel_relay_udp_datagrams_received_total '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

async function joinAndRun(name: string, extra: string[] = []): Promise<{ stateDir: string; agent: Proc }> {
  const created = okJson<{ bootstrap: { joinCommand: string } }>(
    await admin('cluster', 'create', name, '--output', 'json'),
  );
  const stateDir = join(tempDir('direct-cli-agent-'), 'state');
  const args = joinCommandWords(created.bootstrap.joinCommand);
  okJson(await client(...args, '--state-dir', stateDir, ...extra, '--wait', '--output', 'json'));
  const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  agents.push(agent);
  return { stateDir, agent };
}

describe('direct path, real processes on loopback', () => {
  let edge1: { stateDir: string; agent: Proc };

  it('the session moves to the hub UDP port: status, the cluster API and the UDP counters say so', async () => {
    edge1 = await joinAndRun('edge-1');
    const st = await until(
      'status direct',
      () => getStatus(edge1.stateDir),
      (s) => s.path === 'direct',
      20_000,
    );
    expect(st.connected).toBe(true);
    expect(st.pathDetail?.remote).toBe(`127.0.0.1:${udpPort}`);
    expect(st.pathDetail?.reason).toBeNull();
    await until(
      'cluster direct',
      () => getCluster('edge-1'),
      (c) => c.connected && c.path === 'direct',
      10_000,
    );
    expect(await udpReceived()).toBeGreaterThan(0);
  }, 90_000);

  it('path: relay-only moves it to the relay without a restart; auto lets it go direct again', async () => {
    expect((await admin('values', 'set', 'edge-1', '--set', 'path=relay-only')).code).toBe(0);
    const relayed = await until(
      'status relay-only',
      () => getStatus(edge1.stateDir),
      (s) => s.path === 'relayed' && s.pathDetail?.reason === 'relay-only',
      30_000,
    );
    expect(relayed.connected).toBe(true);
    await until(
      'cluster relayed',
      () => getCluster('edge-1'),
      (c) => c.connected && c.path === 'relayed',
      10_000,
    );
    expect((await admin('values', 'set', 'edge-1', '--set', 'path=auto')).code).toBe(0);
    await until(
      'status direct again',
      () => getStatus(edge1.stateDir),
      (s) => s.path === 'direct',
      30_000,
    );
  }, 90_000);

  it('--egress 443-only stays relayed and sends the hub UDP port nothing', async () => {
    await edge1.agent.stop();
    await sleep(500);
    const before = await udpReceived();
    const edge2 = await joinAndRun('edge-2', ['--egress', '443-only']);
    const st = await until(
      'status relayed (443-only)',
      () => getStatus(edge2.stateDir),
      (s) => s.connected && s.pathDetail?.reason === '443-only',
      20_000,
    );
    expect(st.path).toBe('relayed');
    await sleep(3_000);
    expect(await udpReceived()).toBe(before);
  }, 90_000);
});
