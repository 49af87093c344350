/**
 * A relay (`tunnel-relay serve` with its UDP port and STUN responder) on the host side of a NAT router's WAN,
 * one cluster, and its agent (`tunnel-client run`) joined and running in the agent namespace behind the
 * router (nat-topology.ts, namespace-agent.ts): the real processes of the direct-path tests.
 */
import { expect } from 'vitest';
import {
  adminEnvOf,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from '../cli-harness.js';
import { type AgentStatus, readAgentStatus } from './agent-status.js';
import { startNamespaceAgent } from './namespace-agent.js';
import { type AgentNat, createNatTopology, type NatTopology } from './nat-topology.js';
import type { ProcessHandle } from './process.js';

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
  /** How long the running agent may live. */
  timeoutMs: number;
  /** Added to the running agent's environment. */
  agentEnv?: Record<string, string>;
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
  const { stateDir, proc: agent } = await startNamespaceAgent(t.agent, {
    joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand as string,
    prefix: 'nat-agent',
    runTimeoutMs: o.timeoutMs,
    env: o.agentEnv,
  });
  const done = async () => {
    await agent.stop();
    await relay.stop();
    await t.destroy();
  };
  return {
    t,
    relay,
    ready,
    adminEnv,
    cluster: o.cluster,
    udpPort,
    stateDir,
    agent,
    status: () => readAgentStatus(stateDir),
    done,
  };
}
