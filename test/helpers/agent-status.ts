/**
 * An agent's status as `tunnel-client status --state-dir DIR --output json` prints it (the built CLI,
 * test/cli-harness.ts), read once or polled until a condition holds (wait.ts). A read while status.json is being
 * rewritten counts as "not yet".
 */
import { CLIENT_BIN, cleanEnv, run } from '../cli-harness.js';
import { pollUntil } from './wait.js';

/** The parts of the status most tests read; a test may read more by naming its own type. */
export interface AgentStatus {
  connected: boolean;
  path: string;
  pathDetail: { remote: string | null; reason?: string | null; nat?: string; mtu?: number | null } | null;
}

export async function readAgentStatus<S = AgentStatus>(stateDir: string): Promise<S> {
  const r = await run(CLIENT_BIN, ['status', '--state-dir', stateDir, '--output', 'json'], cleanEnv());
  return JSON.parse(r.stdout) as S;
}

export interface AgentStatusWait<S> {
  stateDir: string;
  /** Named in the timeout error. */
  what: string;
  until: (status: S) => boolean;
  timeoutMs: number;
  /** 200 ms unless told. */
  intervalMs?: number;
}

/** Polls the status until `until` holds; resolves with that status and the ms it took. */
export async function waitForAgentStatus<S = AgentStatus>(
  o: AgentStatusWait<S>,
): Promise<{ value: S; elapsedMs: number }> {
  return pollUntil({
    what: o.what,
    read: () => readAgentStatus<S>(o.stateDir),
    until: o.until,
    timeoutMs: o.timeoutMs,
    intervalMs: o.intervalMs ?? 200,
  });
}
