#!/usr/bin/env node
/** tunnel-relay: the relay server and its admin commands. Wiring only. */
import { Command } from 'commander';
import { main } from '../../shared/cli/run-cli.js';
import { packageVersion } from '../../shared/cli/version.js';
import { clusterCommand } from './cluster.js';
import { kubeconfigCommand } from './kubeconfig.js';
import { serveCommand } from './serve.js';
import { tokenCommand } from './token.js';
import { valuesCommand } from './values.js';

export function buildProgram(): Command {
  return new Command('tunnel-relay')
    .description('relay for the secure tunnel: control-plane API, packet relay and hub node on one TLS port')
    .version(packageVersion())
    .addCommand(serveCommand())
    .addCommand(clusterCommand())
    .addCommand(tokenCommand())
    .addCommand(valuesCommand())
    .addCommand(kubeconfigCommand());
}

main(buildProgram());
