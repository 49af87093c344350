/**
 * Don't-fragment on the direct path, with real processes: the agent's first hop carries jumbo frames, its
 * router's next link only 1,500 bytes (nat-topology.ts, hub on the host):
 *
 *   agent ns ══ LAN, MTU 9,000 ══ router ns (MASQUERADE) ── WAN, MTU 1,500 ── host: relay + hub UDP port
 *
 * - on the GSO socket (the default; probes with don't-fragment): the search's jumbo probes die at the
 *   router (a mangle PREROUTING rule there counts them arriving), so the path stays at 1,420;
 * - on node:dgram (TUNNEL_UDP_GSO=off; it cannot ask for don't-fragment per datagram) the same probes come through
 *   fragmented, are acknowledged, and the path climbs to 8,920 over a link that carries 1,500: what the first
 *   case avoids.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, sleep } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { addRule, type IptablesRule } from './helpers/iptables.js';
import { type NatAgent, startNatAgent } from './helpers/nat-agent.js';
import type { Netns } from './helpers/netns.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { waitFor } from './helpers/wait.js';

const agents: NatAgent[] = [];

/** Every link of `ns` but lo and `except` to `mtu`. */
async function setLinkMtus(ns: Netns, mtu: number, except?: string): Promise<void> {
  const { stdout } = await ns.exec('ip', ['-o', 'link', 'show']);
  const names = [...stdout.matchAll(/^\d+: ([^:@]+)[:@]/gm)].map((m) => m[1] ?? '');
  for (const name of names.filter((n) => n !== 'lo' && n !== except)) {
    await ns.exec('ip', ['link', 'set', name, 'mtu', String(mtu)]);
  }
}

/** An agent behind the router whose LAN is jumbo and WAN standard; a counter of jumbo UDP arriving at the router. */
async function jumboLan(cluster: string, agentEnv?: Record<string, string>) {
  const a = await startNatAgent({ nat: 'masquerade', cluster, timeoutMs: 200_000, agentEnv });
  agents.push(a);
  await setLinkMtus(a.t.agent, 9_000);
  await setLinkMtus(a.t.agentRouter, 9_000, a.t.agentRouter.nsIf);
  const jumbo: IptablesRule = await addRule(
    a.t.agentRouter.name,
    'PREROUTING',
    ['-p', 'udp', '-m', 'length', '--length', '1501:65535'],
    'ACCEPT',
    { table: 'mangle' },
  );
  return { a, jumbo };
}

const direct = (a: NatAgent) => async () => {
  const r = await a.status();
  return r.connected && r.path === 'direct';
};

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables']);
  buildIfStale();
});

afterAll(async () => {
  for (const a of agents) await a.done();
  await cleanup();
  await cleanupAll();
});

describe('direct path MTU search beyond the first hop', () => {
  it("with don't-fragment the jumbo probes die at the router and the path stays at 1,420", async () => {
    const { a, jumbo } = await jumboLan('edge-df', { TUNNEL_UDP_GSO: 'on' });
    await waitFor(direct(a), 30_000, 'the direct path', 250);
    await waitFor(
      async () => (await jumbo.counters()).packets > 0,
      20_000,
      'a jumbo probe at the router',
      250,
    );
    // Probes are lost after their timeout; give the search time to have heard an ack if one could come.
    await sleep(4_000);
    const r = await a.status();
    expect(r.path).toBe('direct');
    expect(r.pathDetail?.mtu).toBe(1_420);
  }, 90_000);

  it("on node:dgram (no don't-fragment) they come through fragmented and the path climbs to 8,920", async () => {
    const { a, jumbo } = await jumboLan('edge-frag', { TUNNEL_UDP_GSO: 'off' });
    await waitFor(direct(a), 30_000, 'the direct path', 250);
    await waitFor(
      async () => (await a.status()).pathDetail?.mtu === 8_920,
      20_000,
      '8,920 through fragments',
      250,
    );
    expect((await jumbo.counters()).packets).toBeGreaterThan(0);
  }, 90_000);
});
