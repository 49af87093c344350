/**
 * The hub behind its own NAT with no inbound UDP (no port forward; only its TLS port is forwarded), real
 * processes in network namespaces (test/helpers/nat-topology.ts): the relay runs with `--stun-server` for two
 * STUN servers at two public addresses (the relay's own STUN responder, test/helpers/stun-server.ts), so it
 * learns the address its NAT maps its UDP port to and offers it to the agent; the agent asks the same two.
 * - Both NATs endpoint-independent (MASQUERADE keeping ports): both sides probe each other's mapped address at
 *   once (hole punching) and the session goes direct.
 * - The agent's NAT with --random-fully: the two STUN servers see two different ports, so the agent knows its
 *   NAT maps per destination; with a hub that takes no unsolicited UDP, direct cannot work: the agent stays
 *   relayed with reason mapping-varies, and after the first attempts neither side sends it any more probes
 *   (iptables counters over several seconds).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, CLIENT_BIN, cleanEnv, cleanup, RELAY_BIN, run, sleep } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { addRule } from './helpers/iptables.js';
import { startNamespaceAgent } from './helpers/namespace-agent.js';
import { startNamespaceRelay } from './helpers/namespace-relay.js';
import { type AgentNat, createDoubleNatTopology, type DoubleNatTopology } from './helpers/nat-topology.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import type { ProcessHandle } from './helpers/process.js';
import { type StunServers, startStunServers } from './helpers/stun-server.js';
import { pollUntil } from './helpers/wait.js';

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables', 'sysctl']);
  buildIfStale();
});

afterAll(async () => {
  await cleanup();
  await cleanupAll();
});

interface StatusReport {
  connected: boolean;
  path: string;
  pathDetail: { remote: string | null; reason: string | null; nat?: string } | null;
}

const [TLS, UDP, STUN] = [8443, 51820, 3478];

interface Setup {
  t: DoubleNatTopology;
  stateDir: string;
  status(): Promise<StatusReport>;
  statusText(): Promise<string>;
  /** What the hub's STUN said of its own NAT, from the relay's log: the last verdict and mapped address. */
  hubStun(): { stun?: string; reflexive?: { host: string; port: number } } | undefined;
  /** The agent's output so far. */
  agentLog(): string;
  done(): Promise<void>;
}

/** The relay in the hub namespace, no UDP forwarded to it, the STUN servers in inet, the agent joined and run. */
async function setup(nat: AgentNat): Promise<Setup> {
  const t = await createDoubleNatTopology({ nat, forward: { udp: [], tcp: [TLS] } });
  let stun: StunServers | undefined;
  let relay: ProcessHandle | undefined;
  let agent: ProcessHandle | undefined;
  const done = async () => {
    await agent?.stop();
    await relay?.stop();
    await stun?.stop();
    await t.destroy();
  };
  try {
    stun = await startStunServers(t.inet, { hosts: [t.inetAddress, t.inetAgentSideAddress], port: STUN });
    const stunFlags = stun.endpoints.flatMap((e) => ['--stun-server', e]);
    const started = await startNamespaceRelay(t, {
      tlsPort: TLS,
      args: ['--udp-port', String(UDP), '--stun-port', 'off', ...stunFlags],
      prefix: 'hub-nat-relay',
    });
    const proc = started.proc;
    relay = proc;
    const created = await run(
      RELAY_BIN,
      ['cluster', 'create', `hub-nat-${nat}`, '--output', 'json'],
      started.adminEnv,
    );
    expect(created.code, created.stderr).toBe(0);
    const joined = await startNamespaceAgent(t.agent, {
      joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand,
      extraArgs: stunFlags,
      prefix: 'hub-nat-agent',
      runTimeoutMs: 60_000,
    });
    agent = joined.proc;
    const { stateDir } = joined;
    const statusRun = (output: string) =>
      run(CLIENT_BIN, ['status', '--state-dir', stateDir, '--output', output], cleanEnv());
    return {
      t,
      stateDir,
      status: async () => JSON.parse((await statusRun('json')).stdout) as StatusReport,
      statusText: async () => (await statusRun('text')).stdout,
      agentLog: () => agent?.output() ?? '',
      hubStun: () => {
        const said = proc
          .output()
          .split('\n')
          .filter((l) => l.includes('hub: address from STUN changed'));
        return said.length > 0 ? JSON.parse(said[said.length - 1] ?? '{}') : undefined;
      },
      done,
    };
  } catch (err) {
    await done();
    throw err;
  }
}

/** Polls `status` every 250 ms until `pred` holds; resolves with that status. */
async function until(
  what: string,
  status: () => Promise<StatusReport>,
  pred: (r: StatusReport) => boolean,
  ms: number,
): Promise<StatusReport> {
  return (await pollUntil({ what, read: status, until: pred, timeoutMs: ms, intervalMs: 250 })).value;
}

describe('the hub behind NAT with no inbound UDP, real processes', () => {
  it('both NATs endpoint-independent: the hub learns its mapping by STUN and both punch through: direct', async () => {
    const s = await setup('masquerade');
    try {
      const r = await until('direct', s.status, (x) => x.connected && x.path === 'direct', 30_000);
      // The direct remote is the hub's mapped address (its NAT kept the port), learnt by the hub's STUN.
      expect(r.pathDetail?.remote).toBe(`${s.t.hubPublicAddress}:${UDP}`);
      expect(r.pathDetail?.nat).toBe('ok');
      expect(s.hubStun()).toMatchObject({ stun: 'ok', reflexive: { host: s.t.hubPublicAddress, port: UDP } });
    } finally {
      await s.done();
    }
  }, 60_000);

  it("the agent's NAT maps per destination: relayed with that reason, and no more probes after the first", async () => {
    const s = await setup('random-fully');
    try {
      // Probes that leave the agent's namespace (STUN refreshes aside) and the hub's probes towards the agent.
      const agentProbes = await addRule(
        s.t.agent.name,
        'OUTPUT',
        ['-p', 'udp', '!', '--dport', String(STUN)],
        'ACCEPT',
      );
      const hubProbes = await addRule(
        s.t.hub.name,
        'OUTPUT',
        ['-p', 'udp', '!', '--dport', String(STUN)],
        'ACCEPT',
      );
      const r = await until(
        'relayed, mapping varies',
        s.status,
        (x) => x.connected && x.pathDetail?.reason === 'mapping-varies',
        30_000,
      );
      expect(r.path).toBe('relayed');
      expect(r.pathDetail?.nat).toBe('varies');
      expect(await s.statusText()).toMatch(
        /relayed why:\s+mapping-varies \(NAT mapping varies by destination\)/,
      );
      // The first attempts: the confirm window (5 s) and a ping timeout (3 s) after the hub's candidates came.
      await sleep(12_000);
      const [agentFirst, hubFirst, logsFirst] = [
        await agentProbes.counters(),
        await hubProbes.counters(),
        s.agentLog(),
      ];
      expect(agentFirst.packets).toBeGreaterThan(0);
      expect(hubFirst.packets).toBeGreaterThan(0);
      await sleep(10_000);
      expect(await agentProbes.counters()).toEqual(agentFirst);
      expect(await hubProbes.counters()).toEqual(hubFirst);
      expect(s.agentLog()).toBe(logsFirst); // and the agent logs nothing about it
      // No flapping: still relayed, connected, for the same reason.
      expect(await s.status()).toMatchObject({
        connected: true,
        path: 'relayed',
        pathDetail: { reason: 'mapping-varies' },
      });
    } finally {
      await s.done();
    }
  }, 90_000);
});
