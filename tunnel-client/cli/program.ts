/** The tunnel-client command tree. main.ts runs it; wiring code can pass the data plane factory. */
import { Command } from 'commander';
import { withCompletion } from '../../shared/kit/cli/completion.js';
import { withVersion } from '../../shared/kit/cli/version-command.js';
import type { DataPlaneFactory } from '../agent/agent.js';
import { egressCommand } from './egress.js';
import { joinCommand } from './join.js';
import { runCommand } from './run.js';
import { statusCommand } from './status.js';
import { unjoinCommand } from './unjoin.js';

export interface ClientProgramOptions {
  /**
   * The data plane, started once the cluster is Accepted (its stats() feed `status`). Loaded when `join` or `run`
   * starts and not before, so `status`, `unjoin` and `egress` start without the WireGuard and stream modules.
   */
  readonly loadDataPlane?: () => Promise<DataPlaneFactory>;
}

export function buildClientProgram(opts: ClientProgramOptions = {}): Command {
  const program = new Command('tunnel-client')
    .description('agent for the secure tunnel: joins a relay and keeps a WireGuard tunnel to its hub')
    .addCommand(joinCommand(opts))
    .addCommand(runCommand(opts))
    .addCommand(statusCommand())
    .addCommand(unjoinCommand())
    .addCommand(egressCommand());
  return withCompletion(withVersion(program));
}
