/**
 * Why an agent is relayed, on the cluster as the operator sees it: the real `tunnel-relay serve` (UDP port and
 * STUN responder on) and real `tunnel-client` agents on loopback. The hub alone sees an agent that sends no UDP
 * as "no candidates"; the agent says why with its lease renewals, and `cluster get` (JSON and text) and
 * `cluster list` show the agent's reason (`reasonFrom: agent`) within a lease period: `--egress 443-only`, and
 * the cluster's path value relay-only (then none again once it is direct).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  freeUdpPort,
  Proc,
  RELAY_BIN,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';

/** The relay's lease period here: the agent's reason must show within it. */
const LEASE_S = 10;

let relay: Proc;
let adminEnv: NodeJS.ProcessEnv;
const agents: Proc[] = [];

beforeAll(async () => {
  buildIfStale();
  const started = await startServe(join(tempDir('reason-cli-'), 'relay'), '127.0.0.1:0', [
    '--udp-port',
    String(await freeUdpPort()),
    '--stun-port',
    String(await freeUdpPort()),
    '--lease-duration',
    String(LEASE_S),
  ]);
  relay = started.proc;
  adminEnv = adminEnvOf(started.ready);
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop();
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv(), 40_000);

function json<T>(r: { code: number | null; stdout: string; stderr: string }): T {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

interface ClusterJson {
  connected: boolean;
  path: string;
  pathDetail: { reason: string | null; reasonFrom: string | null } | null;
}

const getCluster = async (name: string) =>
  json<ClusterJson>(await admin('cluster', 'get', name, '--output', 'json'));

/** Polls `cluster get NAME -o json` until `until`; prints how long it took. */
async function clusterUntil(
  name: string,
  what: string,
  until: (c: ClusterJson) => boolean,
  timeoutMs: number,
) {
  const { value, elapsedMs } = await pollUntil({
    what: `${name}: ${what}`,
    read: () => getCluster(name),
    until,
    timeoutMs,
    intervalMs: 250,
  });
  console.log(`${name}: ${what} after ${elapsedMs} ms`);
  return value;
}

async function joinAndRun(name: string, extra: string[] = []): Promise<void> {
  const created = json<{ bootstrap: { joinCommand: string } }>(
    await admin('cluster', 'create', name, '--output', 'json'),
  );
  const stateDir = join(tempDir('reason-cli-agent-'), 'state');
  const args = joinCommandWords(created.bootstrap.joinCommand);
  json(await client(...args, '--state-dir', stateDir, ...extra, '--wait', '--output', 'json'));
  agents.push(new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv()));
}

const connected = (c: ClusterJson) => c.connected && c.path !== 'none';

describe("the agent's relayed reason on the cluster, real processes", () => {
  it('--egress 443-only: cluster get and list say 443-only, reported by the agent, within a lease period', async () => {
    await joinAndRun('edge-443', ['--egress', '443-only']);
    await clusterUntil('edge-443', 'connected', connected, 20_000);
    const c = await clusterUntil(
      'edge-443',
      'reason 443-only',
      (x) => x.pathDetail?.reason === '443-only',
      LEASE_S * 1000,
    );
    expect(c.path).toBe('relayed');
    expect(c.pathDetail?.reasonFrom).toBe('agent');
    const text = await admin('cluster', 'get', 'edge-443');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /relayed why:\s+443-only \(--egress 443-only: no UDP at all\), reported by the agent/,
    );
    const list = await admin('cluster', 'list');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split('\n').find((l) => l.startsWith('edge-443 '))).toMatch(
      / relayed [\d.]+ ms \(443-only\) /,
    );
  }, 90_000);

  it("the cluster's path value relay-only shows as relay-only; back to auto, direct and no reason", async () => {
    await joinAndRun('edge-ro');
    await clusterUntil('edge-ro', 'direct', (c) => c.connected && c.path === 'direct', 30_000);
    expect((await admin('values', 'set', 'edge-ro', '--set', 'path=relay-only')).code).toBe(0);
    const c = await clusterUntil(
      'edge-ro',
      'reason relay-only',
      (x) => x.path === 'relayed' && x.pathDetail?.reason === 'relay-only',
      // The agent reads the new value at its next lease (valuesVersion), then reports the reason.
      2 * LEASE_S * 1000,
    );
    expect(c.pathDetail?.reasonFrom).toBe('agent');
    expect((await admin('values', 'set', 'edge-ro', '--set', 'path=auto')).code).toBe(0);
    const direct = await clusterUntil(
      'edge-ro',
      'direct again',
      (x) => x.path === 'direct' && x.pathDetail?.reason === null,
      2 * LEASE_S * 1000 + 10_000,
    );
    expect(direct.pathDetail?.reasonFrom).toBeNull();
  }, 120_000);
});
