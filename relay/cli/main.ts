#!/usr/bin/env node
/** tunnel-relay binary: the command tree with the data plane (DERP at /derp, hub node) mounted. */
import { main } from '../../shared/cli/run-cli.js';
import { dataPlanePlugin } from '../data-plane.js';
import { buildRelayProgram } from './program.js';

main(buildRelayProgram({ startOptions: { plugins: [dataPlanePlugin()] } }));
