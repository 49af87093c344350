/**
 * Why an agent is relayed, on the cluster as the operator sees it: the real `tunnel-relay serve` (UDP port and
 * STUN responder on) and real `tunnel-client` agents on loopback. The hub alone sees an agent that sends no UDP
 * as "no candidates"; the agent says why with its lease renewals, and `cluster get` (JSON and text) and
 * `cluster list` show the agent's reason (`reasonFrom: agent`) within a lease period: `--egress 443-only`, and
 * the cluster's path value relay-only (then none again once it is direct). The path history records the same
 * reason with who reported it (an entry of its own when only the agent's reason changed), and /metrics counts
 * the agents by it (tunnel_relay_agents_relayed).
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
  startServe,
  tempDir,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';

/** The relay's lease period here: the agent's reason must show within it. */
const LEASE_S = 10;

let relay: Proc;
let ready: ReadyLine;
let relayCaFile: string;
let adminEnv: NodeJS.ProcessEnv;
const agents: Proc[] = [];

beforeAll(async () => {
  buildIfStale();
  const dataDir = join(tempDir('reason-cli-'), 'relay');
  relayCaFile = join(dataDir, 'tls', 'cert.pem');
  const started = await startServe(dataDir, '127.0.0.1:0', [
    '--udp-port',
    String(await freeUdpPort()),
    '--stun-port',
    String(await freeUdpPort()),
    '--lease-duration',
    String(LEASE_S),
  ]);
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(started.ready);
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop();
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv(), 40_000);

interface ClusterJson {
  connected: boolean;
  path: string;
  pathDetail: { reason: string | null; reasonFrom: string | null } | null;
}

const getCluster = async (name: string) =>
  okJson<ClusterJson>(await admin('cluster', 'get', name, '--output', 'json'));

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
  const created = okJson<{ bootstrap: { joinCommand: string } }>(
    await admin('cluster', 'create', name, '--output', 'json'),
  );
  const stateDir = join(tempDir('reason-cli-agent-'), 'state');
  const args = joinCommandWords(created.bootstrap.joinCommand);
  okJson(await client(...args, '--state-dir', stateDir, ...extra, '--wait', '--output', 'json'));
  agents.push(new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv()));
}

const connected = (c: ClusterJson) => c.connected && c.path !== 'none';

/** GET PATH from the relay (its own certificate pinned), with the admin key when `admin`. */
async function fetchText(path: string, opts: { admin?: boolean } = {}): Promise<string> {
  const auth = opts.admin ? ['-H', `Authorization: Bearer ${ready.adminKey}`] : [];
  const r = await curl(['-sS', '-f', '--cacert', relayCaFile, ...auth, `${ready.url}${path}`]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

interface PathChange {
  at: string;
  path: string;
  remote: string | null;
  reason: string | null;
  reasonFrom: string | null;
}

/** Polls GET /api/v1/clusters/NAME/path-history (newest first) until `until`. */
async function historyUntil(name: string, what: string, until: (h: PathChange[]) => boolean) {
  const { value } = await pollUntil({
    what: `${name} history: ${what}`,
    read: async () =>
      (
        JSON.parse(await fetchText(`/api/v1/clusters/${name}/path-history`, { admin: true })) as {
          items: PathChange[];
        }
      ).items,
    until,
    timeoutMs: 10_000,
    intervalMs: 250,
  });
  return value;
}

/** Polls /metrics until tunnel_relay_agents_relayed{reason,from} is `n`. */
async function relayedGaugeUntil(reason: string, from: string, n: number): Promise<void> {
  const series = `tunnel_relay_agents_relayed{reason="${reason}",from="${from}"} `;
  await pollUntil({
    what: `${series}${n}`,
    read: async () => (await fetchText('/metrics')).split('\n').find((l) => l.startsWith(series)),
    until: (line) => line === `${series}${n}`,
    timeoutMs: 10_000,
    intervalMs: 250,
  });
}

/** Every entry with a reason says who reported it: the agent for `agentReason`, else the hub. */
function reportersRight(history: PathChange[], agentReason: string): boolean {
  return history.every(
    (h) =>
      (h.reason === null) === (h.reasonFrom === null) &&
      (h.reason === agentReason) === (h.reasonFrom === 'agent'),
  );
}

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
    // The history says the same, with who reported it; the hub's own reason (no-candidates: the agent sends no
    // UDP) shows only as the hub's, before the agent's first renewal that carried its own.
    const history = await historyUntil(
      'edge-443',
      "443-only, the agent's",
      (h) => h[0]?.reason === '443-only',
    );
    expect(history[0]).toMatchObject({ path: 'relayed', remote: null, reasonFrom: 'agent' });
    expect(reportersRight(history, '443-only'), JSON.stringify(history)).toBe(true);
    await relayedGaugeUntil('443-only', 'agent', 1);
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
    await relayedGaugeUntil('relay-only', 'agent', 1);
    expect((await admin('values', 'set', 'edge-ro', '--set', 'path=auto')).code).toBe(0);
    const direct = await clusterUntil(
      'edge-ro',
      'direct again',
      (x) => x.path === 'direct' && x.pathDetail?.reason === null,
      2 * LEASE_S * 1000 + 10_000,
    );
    expect(direct.pathDetail?.reasonFrom).toBeNull();
    // Newest first: direct again, after the agent's relay-only, after the first direct path.
    const history = await historyUntil('edge-ro', 'direct again', (h) => h[0]?.path === 'direct');
    const relayOnly = history.findIndex((h) => h.reason === 'relay-only');
    expect(relayOnly, JSON.stringify(history)).toBeGreaterThan(0);
    expect(history[relayOnly]).toMatchObject({ path: 'relayed', reasonFrom: 'agent' });
    expect(history.slice(relayOnly).some((h) => h.path === 'direct')).toBe(true);
    expect(reportersRight(history, 'relay-only'), JSON.stringify(history)).toBe(true);
    await relayedGaugeUntil('relay-only', 'agent', 0);
  }, 120_000);
});
