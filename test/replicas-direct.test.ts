/**
 * Direct WireGuard in a relay fleet, with real processes: two (then three) `tunnel-relay serve` replicas on one
 * PostgreSQL behind haproxy, each with its own UDP port, and a real agent in a network namespace behind a MASQUERADE
 * router (test/helpers/nat-fleet.ts).
 * - The agent goes direct to the replica its relay connection is on (that replica's UDP port), and a 20 MB
 *   download through the fleet's CONNECT proxy crosses the NAT as UDP, counted per direction in the router's
 *   FORWARD chain: the body leaves the agent as UDP (the upstream is on the host, so it reaches the agent over
 *   TCP first), the requests and ACKs come back as UDP, and the relay's TCP connection stays small both ways.
 * - kill -9 of that replica, ten times with different timing (some during a download; three times with three
 *   replicas): the agent comes back through another replica and goes direct to that replica's port, never stays
 *   direct to the dead one, and a download after each move is byte-identical.
 * - SIGTERM (drain) of that replica moves the direct path too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, sleep } from './cli-harness.js';
import type { AgentStatus } from './helpers/agent-status.js';
import { cleanupAll } from './helpers/cleanup.js';
import { connectDownload, type DownloadResult } from './helpers/connect-download.js';
import { addRule, type IptablesRule } from './helpers/iptables.js';
import { type FleetReplica, type NatFleet, startNatFleet } from './helpers/nat-fleet.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { pollUntil } from './helpers/wait.js';
import { sha256OfPattern } from './proxy-fixtures.js';

/** Fleet sizes and their kill -9 rounds (each kills the replica holding the agent's session, then restarts it). */
const FLEETS = [
  { replicas: 2, killRounds: 10 },
  { replicas: 3, killRounds: 3 },
] as const;
/** After a kill the agent is back and direct to another replica within this long. */
const MOVE_MS = 30_000;

let fleet: NatFleet;

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables', 'sysctl']);
  buildIfStale();
});

afterAll(async () => {
  await cleanup();
  await cleanupAll();
});

interface Home {
  replica: FleetReplica;
  status: AgentStatus;
}

const directTo = (s: AgentStatus, r: FleetReplica): boolean =>
  s.connected && s.path === 'direct' && (s.pathDetail?.remote ?? '').endsWith(`:${r.udpPort}`);

const homeFound = (on: FleetReplica[], s: AgentStatus | null): s is AgentStatus =>
  s !== null && on.length === 1 && directTo(s, on[0]!);

/**
 * The replica holding the agent's session, once the agent's relay connection is on exactly one replica and its
 * status says direct to that replica's UDP port. Polls the agent's status.json (no process per read); once it
 * says so, `tunnel-client status` must say the same.
 */
async function directHome(o: { timeoutMs: number }): Promise<Home> {
  const read = async () => {
    const on = await fleet.agentReplicas();
    const seen = fleet.statusFile();
    return { on, status: homeFound(on, seen) ? await fleet.status() : seen };
  };
  const { value } = await pollUntil({
    what: 'the agent direct to the replica its relay connection is on',
    read,
    until: (v): v is { on: FleetReplica[]; status: AgentStatus } => homeFound(v.on, v.status),
    timeoutMs: o.timeoutMs,
    intervalMs: 200,
  });
  return { replica: value.on[0]!, status: value.status };
}

/** Fails if the agent shows direct to the dead replica's port once `graceMs` passed since the kill. */
function watchDead(dead: FleetReplica, killedAt: number, graceMs: number): { stop(): void; seen: string[] } {
  const seen: string[] = [];
  let on = true;
  void (async () => {
    while (on) {
      const s = fleet.statusFile();
      if (s && Date.now() - killedAt > graceMs && directTo(s, dead))
        seen.push(`${Date.now() - killedAt} ms after the kill: ${s.pathDetail?.remote}`);
      await sleep(250);
    }
  })();
  return {
    seen,
    stop() {
      on = false;
    },
  };
}

function download(n: number, limitRate?: string): Promise<DownloadResult> {
  return connectDownload({
    proxyUrl: fleet.publicUrl,
    caFile: fleet.caFile,
    adminKey: fleet.adminKey,
    url: `http://${fleet.cluster}.clusters.local:${fleet.upstreamPort}/bytes?n=${n}`,
    limitRate,
    killAfterMs: 90_000,
  }).done;
}

async function expectIdentical(n: number): Promise<void> {
  const r = await download(n);
  expect(r.code, r.stderr).toBe(0);
  expect(r.bytes).toBe(n);
  expect(r.sha256).toBe(sha256OfPattern(n));
}

interface AgentTraffic<T> {
  udpFromAgent: T;
  udpToAgent: T;
  relayFromAgent: T;
  relayToAgent: T;
}

/**
 * Counting rules in the agent router's FORWARD chain, one per direction (FORWARD sees the agent's private address
 * both ways: MASQUERADE rewrites after it, and its reverse before it): the agent's UDP, and the agent's TCP
 * connection to the relay (haproxy's port).
 */
async function countAgentTraffic() {
  const ns = fleet.t.agentRouter.name;
  const agent = fleet.t.agentAddress;
  const lbPort = String(fleet.lb.port);
  const count = (match: string[]) => addRule(ns, 'FORWARD', match, 'ACCEPT', { insert: true });
  const rules: AgentTraffic<IptablesRule> = {
    udpFromAgent: await count(['-s', agent, '-p', 'udp']),
    udpToAgent: await count(['-d', agent, '-p', 'udp']),
    relayFromAgent: await count(['-s', agent, '-p', 'tcp', '--dport', lbPort]),
    relayToAgent: await count(['-d', agent, '-p', 'tcp', '--sport', lbPort]),
  };
  const all = [rules.udpFromAgent, rules.udpToAgent, rules.relayFromAgent, rules.relayToAgent];
  return {
    async read(): Promise<AgentTraffic<{ packets: number; bytes: number }>> {
      const [udpFromAgent, udpToAgent, relayFromAgent, relayToAgent] = await Promise.all(
        all.map((r) => r.counters()),
      );
      return {
        udpFromAgent: udpFromAgent!,
        udpToAgent: udpToAgent!,
        relayFromAgent: relayFromAgent!,
        relayToAgent: relayToAgent!,
      };
    },
    remove: () => Promise.all(all.map((r) => r.remove())),
  };
}

async function restart(r: FleetReplica): Promise<void> {
  await fleet.startReplica(r);
  await fleet.lb.waitForUp(
    fleet.replicas.map((x) => x.name),
    20_000,
  );
}

/**
 * Starts the stopped replica again in the background (the test goes on meanwhile); the caller awaits the
 * result, which fails as the start failed (handled at once, so a failure is not an unhandled rejection first).
 */
function restartMeanwhile(r: FleetReplica): Promise<void> {
  const started = restart(r);
  started.catch(() => undefined);
  return started;
}

describe.each(FLEETS)('direct WireGuard in a fleet of $replicas replicas', ({ replicas, killRounds }) => {
  beforeAll(async () => {
    fleet = await startNatFleet({
      replicas,
      cluster: 'edge-fleet-udp',
      drainGraceS: 3,
      timeoutMs: 1_500_000,
    });
  }, 150_000);

  afterAll(async () => {
    await fleet?.stop();
  });

  it('goes direct to the replica holding its session; a 20 MB download crosses the NAT as UDP', async () => {
    const home = await directHome({ timeoutMs: 40_000 });
    const count = await countAgentTraffic();
    const n = 20_000_000;
    await expectIdentical(n);
    const c = await count.read();
    await count.remove();
    // The body leaves the agent as WireGuard over UDP (at least its bytes, plus WireGuard's and IP's headers);
    // the requests and ACKs toward the agent are UDP too, and far fewer bytes.
    expect(c.udpFromAgent.bytes).toBeGreaterThan(n);
    expect(c.udpToAgent.packets).toBeGreaterThan(0);
    expect(c.udpToAgent.bytes).toBeLessThan(n / 10);
    // The relay's TCP connection (through haproxy) carries almost nothing in either direction (under 100 kB).
    expect(c.relayFromAgent.bytes).toBeLessThan(n / 200);
    expect(c.relayToAgent.bytes).toBeLessThan(n / 200);
    expect(directTo(await fleet.status(), home.replica)).toBe(true);
  }, 120_000);

  it(`kill -9 of the replica holding the session, ${killRounds} times: direct to another one each time`, async () => {
    for (let round = 0; round < killRounds; round++) {
      const home = await directHome({ timeoutMs: MOVE_MS });
      // Different timing each round: a pause of 0-2.7 s, and in odd rounds a download in flight at the kill.
      await sleep((round * 900) % 2_800);
      const inFlight = round % 2 === 1 ? download(8_000_000, '2M') : null;
      if (inFlight) await sleep(300 + round * 100);
      const killedAt = Date.now();
      home.replica.proc!.child.kill('SIGKILL');
      await home.replica.proc!.exited;
      const watch = watchDead(home.replica, killedAt, 5_000);
      let restarted: Promise<void> | null = null;
      try {
        const next = await directHome({ timeoutMs: MOVE_MS });
        expect(next.replica).not.toBe(home.replica);
        // The killed replica starts again while the agent, settled on the next one, serves the download.
        restarted = restartMeanwhile(home.replica);
        await inFlight;
        await expectIdentical(4_000_000);
        expect(directTo(await fleet.status(), next.replica)).toBe(true);
      } finally {
        watch.stop();
        if (restarted) await Promise.allSettled([restarted]);
      }
      await restarted;
      expect(watch.seen, `round ${round}: direct to the dead replica`).toEqual([]);
    }
  }, 900_000);

  it('SIGTERM (drain) of the replica holding the session moves the direct path too', async () => {
    const home = await directHome({ timeoutMs: MOVE_MS });
    const signalledAt = Date.now();
    home.replica.proc!.child.kill('SIGTERM');
    const watch = watchDead(home.replica, signalledAt, 5_000);
    let restarted: Promise<void> | null = null;
    try {
      expect(await home.replica.proc!.exited).toBe(0);
      const next = await directHome({ timeoutMs: MOVE_MS });
      expect(next.replica).not.toBe(home.replica);
      restarted = restartMeanwhile(home.replica);
      await expectIdentical(4_000_000);
    } finally {
      watch.stop();
      if (restarted) await Promise.allSettled([restarted]);
    }
    await restarted;
    expect(watch.seen).toEqual([]);
  }, 120_000);
});
