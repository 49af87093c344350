/**
 * The direct path behind a NAT, with real processes: the agent (`tunnel-client run`) in its own network
 * namespace behind a MASQUERADE router (test/helpers/nat-topology.ts), the relay (`tunnel-relay serve` with its
 * UDP port and STUN responder) on the host side of the router's WAN. The agent learns its outside mapping by
 * STUN, tells the hub over the relay, both probe, and the session goes direct through the NAT. When the router
 * starts dropping UDP the session falls back to the relay (and stays up), and goes direct again once UDP passes.
 * Behind a router that never forwards UDP the agent stays relayed and says why, and after the first probes
 * neither it nor the hub sends UDP any more (iptables counters); behind --random-fully it goes
 * direct all the same and reports that the NAT maps per destination. With the hub behind its own NAT
 * (its UDP port forwarded, `--udp-public-endpoint` the forward's outside address), the agent goes direct to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, RELAY_BIN, run, sleep } from './cli-harness.js';
import { type AgentStatus, readAgentStatus } from './helpers/agent-status.js';
import { cleanupAll } from './helpers/cleanup.js';
import { addRule } from './helpers/iptables.js';
import { startNamespaceAgent } from './helpers/namespace-agent.js';
import { startNamespaceRelay } from './helpers/namespace-relay.js';
import { startNatAgent } from './helpers/nat-agent.js';
import { type AgentNat, createDoubleNatTopology } from './helpers/nat-topology.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import type { ProcessHandle } from './helpers/process.js';
import { pollUntil } from './helpers/wait.js';

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables', 'sysctl']);
  buildIfStale();
});

afterAll(async () => {
  await cleanup();
  await cleanupAll();
});

/** The relay on the WAN's host side, a cluster, and its agent joined and running in the agent namespace. */
const setup = (nat: AgentNat) => startNatAgent({ nat, cluster: 'edge-nat', timeoutMs: 110_000 });

/** Polls `status` every 200 ms until `pred` holds; resolves with the ms it took. */
async function until(
  what: string,
  status: () => Promise<AgentStatus>,
  pred: (r: AgentStatus) => boolean,
  ms: number,
): Promise<number> {
  return (await pollUntil({ what, read: status, until: pred, timeoutMs: ms, intervalMs: 200 })).elapsedMs;
}

describe('direct path through a NAT, real processes', () => {
  it('goes direct through MASQUERADE, falls back when the router drops UDP, goes direct again', async () => {
    const s = await setup('masquerade');
    try {
      await until('direct', s.status, (r) => r.connected && r.path === 'direct', 30_000);
      expect((await s.status()).pathDetail?.remote).toBe(`${s.t.hubPublicAddress}:${s.udpPort}`);
      // Ports kept: STUN and the hub's pongs saw the same mapping.
      await until('nat ok', s.status, (r) => r.pathDetail?.nat === 'ok', 10_000);

      const block = await addRule(s.t.agentRouter.name, 'FORWARD', ['-p', 'udp'], 'DROP', { insert: true });
      // No traffic: the agent notices at keepalive pace (its next probe, within 25 s, goes unanswered, which
      // wakes the selector: 2.5 s), plus the 2 s status tick. Under traffic it is within 3 s
      // (direct-path-flip.test.ts).
      const fellBack = await until('relayed', s.status, (r) => r.path === 'relayed', 45_000);
      expect(fellBack).toBeLessThan(33_000);
      await sleep(3_000);
      expect(await s.status()).toMatchObject({ connected: true, path: 'relayed' });

      await block.remove();
      // Upgrade within 10 s of UDP returning (plus the status tick).
      const back = await until('direct again', s.status, (r) => r.path === 'direct', 20_000);
      expect(back).toBeLessThan(13_000);
    } finally {
      await s.done();
    }
  }, 110_000);

  it('MASQUERADE --random-fully: direct all the same (the hub is reachable), and the NAT shows as varies', async () => {
    const s = await setup('random-fully');
    try {
      await until('direct', s.status, (r) => r.connected && r.path === 'direct', 30_000);
      // STUN (the relay's STUN port) and the hub's pongs (its UDP port) saw two different mappings.
      await until('nat varies', s.status, (r) => r.pathDetail?.nat === 'varies', 10_000);
    } finally {
      await s.done();
    }
  }, 110_000);

  it('behind a router that forwards no UDP: relayed with the reason, no flapping, no UDP after the first probes', async () => {
    const s = await setup('drop-udp');
    try {
      // Every UDP datagram the agent sends (STUN, probes), and the hub's probes reaching the router.
      const agentUdp = await addRule(s.t.agent.name, 'OUTPUT', ['-p', 'udp', '!', '-o', 'lo'], 'ACCEPT');
      const hubProbes = await addRule(s.t.agentRouter.name, 'INPUT', ['-p', 'udp'], 'DROP', { insert: true });
      await until('connected', s.status, (r) => r.connected, 30_000);
      // The first attempts: STUN's 3 s, the confirm window (5 s) and a ping timeout (3 s) after the last news.
      await sleep(12_000);
      const r = await s.status();
      expect(r).toMatchObject({ connected: true, path: 'relayed' });
      expect(r.pathDetail?.reason).toBe('udp-blocked');
      const [agentFirst, hubFirst, logFirst] = [
        await agentUdp.counters(),
        await hubProbes.counters(),
        s.agent.output(),
      ];
      expect(agentFirst.packets).toBeGreaterThan(0);
      await sleep(10_000);
      expect(await agentUdp.counters()).toEqual(agentFirst);
      expect(await hubProbes.counters()).toEqual(hubFirst);
      expect(s.agent.output()).toBe(logFirst);
      expect(await s.status()).toMatchObject({
        connected: true,
        path: 'relayed',
        pathDetail: { reason: 'udp-blocked' },
      });
    } finally {
      await s.done();
    }
  }, 110_000);

  it('the hub behind its own NAT with its UDP port forwarded: the agent goes direct to the forward', async () => {
    const [tls, udp, stun] = [8443, 51820, 3478];
    const t = await createDoubleNatTopology({ nat: 'masquerade', forward: { udp: [udp, stun], tcp: [tls] } });
    let relay: ProcessHandle | undefined;
    let agent: ProcessHandle | undefined;
    try {
      const started = await startNamespaceRelay(t, {
        tlsPort: tls,
        args: [
          '--udp-port',
          String(udp),
          '--udp-public-endpoint',
          `${t.hubPublicAddress}:${udp}`,
          '--stun-port',
          String(stun),
        ],
        prefix: 'nat-hub-relay',
      });
      relay = started.proc;
      const created = await run(
        RELAY_BIN,
        ['cluster', 'create', 'edge-nat2', '--output', 'json'],
        started.adminEnv,
      );
      expect(created.code, created.stderr).toBe(0);
      const joined = await startNamespaceAgent(t.agent, {
        joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand as string,
        prefix: 'nat-hub-agent',
        runTimeoutMs: 60_000,
      });
      agent = joined.proc;
      const s = { status: () => readAgentStatus(joined.stateDir) };
      await until('direct through both NATs', s.status, (r) => r.connected && r.path === 'direct', 30_000);
      expect((await s.status()).pathDetail?.remote).toBe(`${t.hubPublicAddress}:${udp}`);
    } finally {
      await agent?.stop();
      await relay?.stop();
      await t.destroy();
    }
  }, 110_000);
});
