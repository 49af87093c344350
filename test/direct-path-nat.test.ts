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
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/node-flags.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { addRule } from './helpers/iptables.js';
import {
  type AgentNat,
  createDoubleNatTopology,
  createNatTopology,
  type NatTopology,
} from './helpers/nat-topology.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import type { ProcessHandle } from './helpers/process.js';

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

interface Setup {
  t: NatTopology;
  relay: Proc;
  ready: ReadyLine;
  udpPort: number;
  stateDir: string;
  agent: ProcessHandle;
  status(): Promise<StatusReport>;
  done(): Promise<void>;
}

/** The relay on the WAN's host side, a cluster, and its agent joined and running in the agent namespace. */
async function setup(nat: AgentNat): Promise<Setup> {
  const t = await createNatTopology({ nat });
  const udpPort = await freeUdpPort(t.hubPublicAddress);
  const { proc: relay, ready } = await startServe(tempDir('nat-direct-relay-'), `${t.hubPublicAddress}:0`, [
    '--udp-port',
    String(udpPort),
    '--stun-port',
    String(await freeUdpPort(t.hubPublicAddress)),
  ]);
  const adminEnv = adminEnvOf(ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-nat', '--output', 'json'], adminEnv);
  expect(created.code, created.stderr).toBe(0);
  const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand as string);
  const stateDir = join(tempDir('nat-direct-agent-'), 'state');
  const joined = await t.agent.exec(
    process.execPath,
    [...NODE_FLAGS, CLIENT_BIN, ...args, '--state-dir', stateDir, '--wait'],
    {
      timeoutMs: 40_000,
    },
  );
  expect(joined.stderr).not.toMatch(/error/i);
  const agent = t.agent.spawn(process.execPath, [...NODE_FLAGS, CLIENT_BIN, 'run', '--state-dir', stateDir], {
    timeoutMs: 110_000,
  });
  const status = async () => {
    const r = await run(CLIENT_BIN, ['status', '--state-dir', stateDir, '--output', 'json'], cleanEnv());
    return JSON.parse(r.stdout) as StatusReport;
  };
  return {
    t,
    relay,
    ready,
    udpPort,
    stateDir,
    agent,
    status,
    done: async () => {
      await agent.stop();
      await relay.stop();
      await t.destroy();
    },
  };
}

async function until(
  what: string,
  status: () => Promise<StatusReport>,
  pred: (r: StatusReport) => boolean,
  ms: number,
): Promise<number> {
  const start = Date.now();
  let last: StatusReport | undefined;
  for (;;) {
    try {
      last = await status();
      if (pred(last)) return Date.now() - start;
    } catch {
      // status.json being rewritten
    }
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await sleep(200);
  }
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
    const relay = t.hub.spawn(process.execPath, [
      ...NODE_FLAGS,
      RELAY_BIN,
      'serve',
      '--output',
      'json',
      '--listen',
      `0.0.0.0:${tls}`,
      '--data-dir',
      tempDir('nat-hub-relay-'),
      '--public-url',
      `https://${t.hubPublicAddress}:${tls}`,
      '--udp-port',
      String(udp),
      '--udp-public-endpoint',
      `${t.hubPublicAddress}:${udp}`,
      '--stun-port',
      String(stun),
    ]);
    let agent: ProcessHandle | undefined;
    try {
      // The ready line (stdout and the logs on stderr share the handle's output).
      const readyLine = () =>
        relay
          .output()
          .split('\n')
          .find((l) => l.includes('"event":"ready"'));
      const deadline = Date.now() + 20_000;
      while (!readyLine() && Date.now() < deadline) await sleep(100);
      const ready = JSON.parse(readyLine() ?? '{}') as ReadyLine;
      const adminEnv = cleanEnv({
        TUNNEL_RELAY_URL: `https://${t.hubManagementAddress}:${tls}`,
        TUNNEL_ACCESS_KEY: ready.adminKey ?? '',
        TUNNEL_RELAY_CA_PIN: ready.caPin,
      });
      const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-nat2', '--output', 'json'], adminEnv);
      expect(created.code, created.stderr).toBe(0);
      const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand as string);
      const stateDir = join(tempDir('nat-hub-agent-'), 'state');
      await t.agent.exec(
        process.execPath,
        [...NODE_FLAGS, CLIENT_BIN, ...args, '--state-dir', stateDir, '--wait'],
        {
          timeoutMs: 40_000,
        },
      );
      agent = t.agent.spawn(process.execPath, [...NODE_FLAGS, CLIENT_BIN, 'run', '--state-dir', stateDir], {
        timeoutMs: 60_000,
      });
      const s = {
        status: async () => {
          const r = await run(
            CLIENT_BIN,
            ['status', '--state-dir', stateDir, '--output', 'json'],
            cleanEnv(),
          );
          return JSON.parse(r.stdout) as StatusReport;
        },
      };
      await until('direct through both NATs', s.status, (r) => r.connected && r.path === 'direct', 30_000);
      expect((await s.status()).pathDetail?.remote).toBe(`${t.hubPublicAddress}:${udp}`);
    } finally {
      await agent?.stop();
      await relay.stop();
      await t.destroy();
    }
  }, 110_000);
});
