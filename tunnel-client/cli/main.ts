#!/usr/bin/env node
/** tunnel-client binary. */
import { main } from '../../shared/cli/run-cli.js';
import { buildClientProgram } from './program.js';

main(buildClientProgram());
