/** What `join` and `run` share once they have a registration: the relay client, the agent, and its shutdown. */
import { untilSignal } from '../../shared/kit/cli/signals.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import type { Trust } from '../../shared/kit/http/dispatcher.js';
import { describeProxy, type ProxySettings, targetOf } from '../../shared/kit/proxy/proxy-config.js';
import { relayConnectVia } from '../../shared/kit/proxy/transports.js';
import { Agent, type AgentOptions, type FactsSource } from '../agent/agent.js';
import { ClusterFacts } from '../dialer/cluster-facts.js';
import { upstreamTrust } from '../dialer/upstream-trust.js';
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

/**
 * The Kubernetes facts of the agent's default upstream (its API server), reported as claims; none without an
 * http(s) upstream or when its trust settings cannot be read (the data plane reports those).
 */
function clusterFactsOf(upstream: string | null): ((onChange: () => void) => FactsSource) | undefined {
  if (upstream === null || !/^https?:\/\//.test(upstream)) return undefined;
  let trust: ReturnType<typeof upstreamTrust>;
  try {
    trust = upstreamTrust(process.env, upstream);
  } catch {
    return undefined;
  }
  return (onChange) => new ClusterFacts({ upstream, trust, onChange });
}

/** The agent, logging to stderr with the terminal's progress line; not started. */
export function newAgent(parts: Omit<AgentOptions, 'log' | 'progress' | 'clusterFacts'>): Agent {
  const clusterFacts = clusterFactsOf(parts.stateDir.readState().upstream);
  return new Agent({ ...parts, clusterFacts, log: stderrLog, progress: terminalProgress() });
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
