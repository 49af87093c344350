/** `tunnel-client run`: the agent from saved state, until SIGINT/SIGTERM. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { trustFromFlags } from '../../shared/kit/http/trust.js';
import { parseProxyUrl } from '../../shared/kit/proxy/proxy-config.js';
import { readValuesFiles } from '../../shared/kit/values/values-file.js';
import type { DataPlaneFactory } from '../agent/agent.js';
import { AgentApi } from '../agent/api.js';
import type { AgentState } from '../agent/types.js';
import { settingsFromState } from '../egress/agent-proxy.js';
import { closeAgentRun, newAgent, relayClientVia, untilSignalOrStopped } from './agent-run.js';
import {
  type AgentCommandFlags,
  logFormatOption,
  openStateDir,
  stateDirOption,
  stderrLog,
  useLogFormat,
} from './context.js';
import type { ClientProgramOptions } from './program.js';
import { checkStunServersWithEgress, stunServerOption } from './stun-server-option.js';
import { transportText } from './transport-text.js';

interface RunFlags extends AgentCommandFlags {
  proxy?: string;
  proxyCaFile?: string;
  stunServer?: string[];
}

export function runCommand(opts: ClientProgramOptions = {}): Command {
  return new Command('run')
    .description('run the agent from its saved state (after join)')
    .addOption(stateDirOption())
    .option(
      '--proxy <url>',
      'HTTP CONNECT proxy for every relay connection (overrides HTTPS_PROXY; saved in the state dir)',
      (v: string) => parseProxyUrl(v, '--proxy').href,
    )
    .option('--proxy-ca-file <file>', 'PEM CA certificate(s) of an https:// proxy (saved)')
    .addOption(stunServerOption())
    .addOption(logFormatOption())
    .action(async (flags: RunFlags) => {
      useLogFormat(flags.logFormat);
      await runFromState(flags, await opts.loadDataPlane?.());
    });
}

/** The saved state with this run's --proxy, --proxy-ca-file and --stun-server over it (saved when given). */
function stateWithFlags(state: AgentState, flags: RunFlags): AgentState {
  let merged = state;
  if (flags.proxy) merged = { ...merged, proxy: flags.proxy };
  if (flags.proxyCaFile) merged = { ...merged, proxyCaFile: resolve(flags.proxyCaFile) };
  if (flags.stunServer) merged = { ...merged, stunServers: flags.stunServer };
  return merged;
}

async function runFromState(flags: RunFlags, dataPlane: DataPlaneFactory | undefined): Promise<void> {
  // Bad settings stop here (BAD_CONFIG), not later in the session loop.
  transportText(undefined); // a bad TUNNEL_UDP_GSO fails here, before the state is read
  dataPlane?.check?.();
  const stateDir = openStateDir(flags.stateDir);
  const saved = stateDir.readState();
  const cipher = transportText(saved.egress);
  const valuesFiles = readValuesFiles(saved.valuesFiles);
  const state = stateWithFlags(saved, flags);
  checkStunServersWithEgress(state.stunServers ?? [], state.egress);
  const proxy = settingsFromState(stateDir, state);
  const trust = trustFromFlags({ caPin: state.caPin ?? undefined, caFile: state.caFile ?? undefined });
  const client = relayClientVia(state.relay, trust, proxy);
  const api = new AgentApi(client, stateDir.readCredential());
  let unlock: () => void;
  try {
    unlock = stateDir.lock();
    if (flags.proxy || flags.proxyCaFile || flags.stunServer) stateDir.saveState(state);
  } catch (err) {
    await client.close();
    throw err;
  }
  const agent = newAgent({ stateDir, api, valuesFiles, proxy, dataPlane });
  try {
    stderrLog(
      `running cluster ${state.cluster} against ${state.relay} (${state.status}); WireGuard cipher ${cipher}`,
    );
    agent.start();
    // A denied or deleted cluster ends the run (exit 1, the error says what to do); a signal exits 0.
    await untilSignalOrStopped(agent);
  } finally {
    await closeAgentRun({ agent, client, unlock });
  }
}
