#!/usr/bin/env node
/** tunnel-relay binary. */
import { main } from '../../shared/cli/run-cli.js';
import { buildRelayProgram } from './program.js';

main(buildRelayProgram());
