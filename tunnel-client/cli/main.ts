#!/usr/bin/env -S node --initial-old-space-size=64 --heap-growing-percent=200
/**
 * tunnel-client binary: the command tree with the agent's data plane: the WireGuard session over the
 * relay (its tunnel endpoint carries the hub's streams) and the allowlist dialer (tunnel-client/dialer).
 */
import { main } from '../../shared/kit/cli/run-cli.js';
import { stderrLog } from './context.js';
import { buildClientProgram } from './program.js';

main(
  buildClientProgram({
    loadDataPlane: async () => {
      const { agentDataPlane } = await import('../session/agent-data-plane.js');
      return agentDataPlane({ log: stderrLog });
    },
  }),
);
