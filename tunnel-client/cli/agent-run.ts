/** What `join` and `run` share once they have a registration: the relay client, the agent, and its shutdown. */
import { untilSignal } from '../../shared/kit/cli/signals.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import type { Trust } from '../../shared/kit/http/dispatcher.js';
import { describeProxy, type ProxySettings, targetOf } from '../../shared/kit/proxy/proxy-config.js';
import { relayConnectVia } from '../../shared/kit/proxy/transports.js';
import { Agent, type AgentOptions } from '../agent/agent.js';
import { endProgress, stderrLog, terminalProgress } from './context.js';

/** The HTTPS client to the relay, through the CONNECT proxy when one is set (said once on stderr). */
export function relayClientVia(relay: string, trust: Trust, proxy: ProxySettings): RelayClient {
  const client = new RelayClient({
    baseUrl: relay,
    trust,
    connectVia: relayConnectVia(proxy, new URL(relay).protocol),
  });
  if (proxy.https || proxy.http) stderrLog(`relay ${describeProxy(proxy, targetOf(relay))}`);
  return client;
}

/** The agent, logging to stderr with the terminal's progress line; not started. */
export function newAgent(parts: Omit<AgentOptions, 'log' | 'progress'>): Agent {
  return new Agent({ ...parts, log: stderrLog, progress: terminalProgress() });
}

/** Until SIGINT/SIGTERM or the agent stops by itself (a denied or deleted cluster: its error ends the command). */
export async function untilSignalOrStopped(agent: Agent): Promise<void> {
  const sig = await Promise.race([untilSignal(), agent.whenStopped()]);
  stderrLog(`${sig}: stopping`);
}

/** What a command that runs the agent holds: filled in as it gets each, released by closeAgentRun. */
export interface AgentRun {
  client: RelayClient;
  agent?: Agent;
  unlock?: () => void;
}

/**
 * The shutdown of a command that ran the agent: progress line, agent (drained: the hub opens no new streams here and
 * the open ones may end, agent.ts AGENT_STOP_GRACE_MS), relay client, then the state lock.
 */
export async function closeAgentRun(run: AgentRun): Promise<void> {
  endProgress();
  await run.agent?.stop();
  await run.client.close();
  run.unlock?.();
}
