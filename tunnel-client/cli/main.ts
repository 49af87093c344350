#!/usr/bin/env node
/** tunnel-client binary: the command tree with the WireGuard session over the relay as the data plane. */
import { main } from '../../shared/cli/run-cli.js';
import { sessionDataPlane } from '../session/session-data-plane.js';
import { stderrLog } from './context.js';
import { buildClientProgram } from './program.js';

main(buildClientProgram({ dataPlane: sessionDataPlane({ log: stderrLog }) }));
