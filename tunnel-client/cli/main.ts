#!/usr/bin/env node
/** tunnel-client: the agent CLI (join, run, status, unjoin). Wiring only; the work is in ../agent. */
import { Command } from 'commander';
import { main } from '../../shared/cli/run-cli.js';
import { packageVersion } from '../../shared/cli/version.js';
import { joinCommand } from './join.js';
import { runCommand } from './run.js';
import { statusCommand } from './status.js';
import { unjoinCommand } from './unjoin.js';

export function buildProgram(): Command {
  return new Command('tunnel-client')
    .description('agent for the secure tunnel: joins a relay and keeps a WireGuard tunnel to its hub')
    .version(packageVersion())
    .addCommand(joinCommand())
    .addCommand(runCommand())
    .addCommand(statusCommand())
    .addCommand(unjoinCommand());
}

main(buildProgram());
