/** `tunnel-client unjoin`: deregister (DELETE /api/v1/agent) and remove the state dir. */
import { Command } from 'commander';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { type OutputFormat, outputOption, streamPrinter } from '../../shared/kit/cli/output.js';
import { apiFromState, openStateDir, stateDirOption, stderrLog } from './context.js';

export function unjoinCommand(): Command {
  return new Command('unjoin')
    .description('deregister from the relay and remove the local state')
    .addOption(stateDirOption())
    .option('--force', 'remove the local state even when the relay cannot be told')
    .addOption(outputOption())
    .action(async (flags: { stateDir?: string; force?: boolean; output: OutputFormat }) => {
      const stateDir = openStateDir(flags.stateDir);
      const state = stateDir.readState();
      // Refuses (CONFLICT) while an agent runs from this state dir; remove() drops the lock file.
      stateDir.lock();
      const { client, api } = apiFromState(stateDir, state);
      let deregistered = true;
      try {
        await api.unjoin();
      } catch (err) {
        // Already revoked or deleted on the relay: nothing left to tell it.
        const gone = isTunnelError(err, 'UNAUTHENTICATED') || isTunnelError(err, 'NOT_FOUND');
        if (!gone && !flags.force) {
          const why = isTunnelError(err) ? `${err.code}: ${err.message}` : String(err);
          throw new TunnelError(
            isTunnelError(err) ? err.code : 'INTERNAL',
            `${why}; the local state in ${stateDir.dir} was kept (retry, or pass --force to remove it anyway)`,
          );
        }
        deregistered = false;
        stderrLog(
          `relay did not deregister cluster ${state.cluster} (${isTunnelError(err) ? err.code : err}); removing local state`,
        );
      } finally {
        await client.close();
      }
      stateDir.remove();
      const out = streamPrinter();
      if (flags.output === 'json')
        out.json({ unjoined: state.cluster, deregistered, stateDir: stateDir.dir });
      else out.line(`unjoined cluster ${state.cluster}; removed ${stateDir.dir}`);
    });
}
