/** What the tunnel-client commands share: the state dir flag and a relay client built from saved state. */
import { Option } from 'commander';
import { RelayClient } from '../../shared/http/client.js';
import { trustFromFlags } from '../../shared/http/trust.js';
import { AgentApi } from '../agent/api.js';
import { defaultStateDir, StateDir } from '../agent/state-dir.js';
import type { AgentState } from '../agent/types.js';

export function stateDirOption(): Option {
  return new Option(
    '--state-dir <dir>',
    'agent state directory (env TUNNEL_CLIENT_STATE_DIR, default ~/.tunnel-client)',
  );
}

export function openStateDir(flag: string | undefined): StateDir {
  return new StateDir(flag ?? defaultStateDir());
}

/** A relay client for a saved registration, authenticated with the agent credential. */
export function apiFromState(stateDir: StateDir, state: AgentState): { client: RelayClient; api: AgentApi } {
  const client = new RelayClient({
    baseUrl: state.relay,
    trust: trustFromFlags({ caPin: state.caPin ?? undefined, caFile: state.caFile ?? undefined }),
  });
  return { client, api: new AgentApi(client, stateDir.readCredential()) };
}

/** Writes progress lines to stderr with a timestamp. */
export function stderrLog(line: string): void {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}
