/**
 * What an idle connected agent costs the relay, with real processes: the agent (`tunnel-client run`) behind a
 * MASQUERADE router (test/helpers/nat-agent.ts), the relay on the host side. Once the agent is connected and
 * no application traffic flows, counting rules on the router (no target: they only count) tally every packet
 * between the agent and the relay for 30 s, TCP (the relay connection on 443) and UDP (the direct path,
 * disco, STUN) apart. At keepalive pace (liveness probes and disco pings every 25 s, docs/LIMITS.md) that is
 * about 30 TCP packets (mostly the relay connection's own keepalive) and 10 UDP packets in 30 s; an agent
 * probing every 2 s and pinging its direct path every second sent 60 TCP and 170 UDP packets on the direct
 * path, 120 TCP packets relayed (docs/BENCHMARKS.md).
 * One agent on the direct path, one relayed (the router forwards no UDP).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, sleep } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { iptables, ruleCounters } from './helpers/iptables.js';
import { startNatAgent } from './helpers/nat-agent.js';
import type { AgentNat } from './helpers/nat-topology.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { pollUntil } from './helpers/wait.js';

const WINDOW_MS = 30_000;
/** After the path settles: the selector's confirm window (5 s) and active window (10 s) are over by then. */
const SETTLE_MS = 15_000;

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables', 'sysctl']);
  buildIfStale();
});

afterAll(async () => {
  await cleanup();
  await cleanupAll();
});

interface Tally {
  packets: number;
  bytes: number;
}

/** Counting rules (no target) at the top of the router's FORWARD chain, one per protocol and direction. */
async function countAgentTraffic(
  router: string,
  agent: string,
): Promise<() => Promise<Record<string, Tally>>> {
  const tags: Record<string, string> = {};
  for (const proto of ['tcp', 'udp']) {
    for (const [dir, flag] of [
      ['up', '-s'],
      ['down', '-d'],
    ] as const) {
      const tag = `idle-${proto}-${dir}-${process.pid}`;
      await iptables(router, ['-I', 'FORWARD', flag, agent, '-p', proto, '-m', 'comment', '--comment', tag]);
      tags[`${proto} ${dir}`] = tag;
    }
  }
  return async () => {
    const out: Record<string, Tally> = {};
    for (const [name, tag] of Object.entries(tags)) out[name] = await ruleCounters(router, 'FORWARD', tag);
    return out;
  };
}

async function idleMinute(nat: AgentNat, path: 'direct' | 'relayed'): Promise<Record<string, Tally>> {
  const s = await startNatAgent({ nat, cluster: `idle-${path}`, timeoutMs: 150_000 });
  try {
    await pollUntil({
      what: `the ${path} path`,
      read: s.status,
      until: (r) => r.connected && r.path === path,
      timeoutMs: 40_000,
      intervalMs: 200,
    });
    await sleep(SETTLE_MS);
    const read = await countAgentTraffic(s.t.agentRouter.name, s.t.agentAddress);
    await sleep(WINDOW_MS);
    const tally = await read();
    // Still up at keepalive pace: the hub saw the agent's probes, the agent the hub's answers.
    expect(await s.status()).toMatchObject({ connected: true, path });
    console.log(`idle agent, ${path} path, packets in ${WINDOW_MS / 1000} s: ${JSON.stringify(tally)}`);
    return tally;
  } finally {
    await s.done();
  }
}

const total = (t: Record<string, Tally>, proto: string) =>
  (t[`${proto} up`]?.packets ?? 0) + (t[`${proto} down`]?.packets ?? 0);

describe('an idle connected agent costs the relay a few packets in 30 s', () => {
  it('on the direct path', async () => {
    const t = await idleMinute('masquerade', 'direct');
    // 25 s pace: a liveness probe with its answer and a WireGuard keepalive, a disco ping with its pong to the
    // hub's UDP port and one over the relay; the relay connection's keepalive (DERP pings) and TCP ACKs.
    expect(total(t, 'udp')).toBeLessThanOrEqual(24);
    expect(total(t, 'tcp')).toBeLessThanOrEqual(45);
  }, 170_000);

  it('relayed (the router forwards no UDP)', async () => {
    const t = await idleMinute('drop-udp', 'relayed');
    expect(total(t, 'tcp')).toBeLessThanOrEqual(50);
    // STUN and the candidates' pings, at keepalive pace, dropped by the router.
    expect(t['udp up']?.packets ?? 0).toBeLessThanOrEqual(12);
  }, 170_000);
});
