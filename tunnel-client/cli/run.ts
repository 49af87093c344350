/** `tunnel-client run`: the agent from saved state, until SIGINT/SIGTERM. */
import { Command } from 'commander';
import { untilSignal } from '../../shared/cli/signals.js';
import { readValuesFiles } from '../../shared/values/values-file.js';
import { Agent } from '../agent/agent.js';
import {
  apiFromState,
  endProgress,
  openStateDir,
  stateDirOption,
  stderrLog,
  terminalProgress,
} from './context.js';
import type { ClientProgramOptions } from './program.js';

export function runCommand(opts: ClientProgramOptions = {}): Command {
  return new Command('run')
    .description('run the agent from its saved state (after join)')
    .addOption(stateDirOption())
    .action(async (flags: { stateDir?: string }) => {
      const stateDir = openStateDir(flags.stateDir);
      const state = stateDir.readState();
      const valuesFiles = readValuesFiles(state.valuesFiles);
      const { client, api } = apiFromState(stateDir, state);
      let unlock: () => void;
      try {
        unlock = stateDir.lock();
      } catch (err) {
        await client.close();
        throw err;
      }
      const agent = new Agent({
        stateDir,
        api,
        valuesFiles,
        log: stderrLog,
        progress: terminalProgress(),
        ...(opts.dataPlane ? { dataPlane: opts.dataPlane } : {}),
      });
      try {
        stderrLog(`running cluster ${state.cluster} against ${state.relay} (${state.status})`);
        agent.start();
        const sig = await untilSignal();
        stderrLog(`${sig}: stopping`);
      } finally {
        endProgress();
        await agent.close();
        await client.close();
        unlock();
      }
    });
}
