#!/usr/bin/env -S node --initial-old-space-size=64 --heap-growing-percent=200
/**
 * tunnel-client binary: the command tree with the WireGuard session over the relay as the data plane,
 * plus the hub stream binding and the allowlist dialer (tunnel-client/dialer).
 */
import { main } from '../../shared/cli/run-cli.js';
import { streamsDataPlane } from '../dialer/streams-data-plane.js';
import { stderrLog } from './context.js';
import { buildClientProgram } from './program.js';

main(buildClientProgram({ dataPlane: streamsDataPlane({ log: stderrLog }) }));
