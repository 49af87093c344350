/**
 * A relay (`tunnel-relay serve` with its UDP port and STUN responder) on the host side of a NAT router's WAN,
 * one cluster, and its agent (`tunnel-client run`) joined and running in the agent namespace behind the
 * router (test/helpers/nat-topology.ts): the real processes of the direct-path tests.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { joinCommandWords } from '../shared/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/node-flags.js';
import {
  adminEnvOf,
  CLIENT_BIN,
  cleanEnv,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { type AgentNat, createNatTopology, type NatTopology } from './helpers/nat-topology.js';
import type { ProcessHandle } from './helpers/process.js';

/** The parts of `tunnel-client status -o json` these tests read. */
export interface AgentStatus {
  connected: boolean;
  path: string;
  pathDetail: { remote: string | null; reason: string | null; nat?: string } | null;
}

export interface NatAgent {
  readonly t: NatTopology;
  readonly relay: Proc;
  readonly ready: ReadyLine;
  readonly adminEnv: NodeJS.ProcessEnv;
  readonly cluster: string;
  readonly udpPort: number;
  readonly stateDir: string;
  readonly agent: ProcessHandle;
  status(): Promise<AgentStatus>;
  done(): Promise<void>;
}

export async function startNatAgent(o: {
  nat: AgentNat;
  cluster: string;
  timeoutMs: number;
}): Promise<NatAgent> {
  const t = await createNatTopology({ nat: o.nat });
  const udpPort = await freeUdpPort(t.hubPublicAddress);
  const { proc: relay, ready } = await startServe(tempDir('nat-agent-relay-'), `${t.hubPublicAddress}:0`, [
    '--udp-port',
    String(udpPort),
    '--stun-port',
    String(await freeUdpPort(t.hubPublicAddress)),
  ]);
  const adminEnv = adminEnvOf(ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', o.cluster, '--output', 'json'], adminEnv);
  expect(created.code, created.stderr).toBe(0);
  const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand as string);
  const stateDir = join(tempDir('nat-agent-'), 'state');
  const joined = await t.agent.exec(
    process.execPath,
    [...NODE_FLAGS, CLIENT_BIN, ...args, '--state-dir', stateDir, '--wait'],
    { timeoutMs: 40_000 },
  );
  expect(joined.stderr).not.toMatch(/error/i);
  const agent = t.agent.spawn(process.execPath, [...NODE_FLAGS, CLIENT_BIN, 'run', '--state-dir', stateDir], {
    timeoutMs: o.timeoutMs,
  });
  const status = async () => {
    const r = await run(CLIENT_BIN, ['status', '--state-dir', stateDir, '--output', 'json'], cleanEnv());
    return JSON.parse(r.stdout) as AgentStatus;
  };
  const done = async () => {
    await agent.stop();
    await relay.stop();
    await t.destroy();
  };
  return { t, relay, ready, adminEnv, cluster: o.cluster, udpPort, stateDir, agent, status, done };
}
