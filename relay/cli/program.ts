/** The tunnel-relay command tree. main.ts runs it; wiring code can pass relay start options (plugins). */
import { Command } from 'commander';
import { packageVersion } from '../../shared/cli/version.js';
import type { StartOptions } from '../server.js';
import { clusterCommand } from './cluster.js';
import { kubeconfigCommand } from './kubeconfig.js';
import { serveCommand } from './serve.js';
import { tokenCommand } from './token.js';
import { valuesCommand } from './values.js';

export function buildRelayProgram(opts: { startOptions?: StartOptions } = {}): Command {
  return new Command('tunnel-relay')
    .description('relay for the secure tunnel: control-plane API, packet relay and hub node on one TLS port')
    .version(packageVersion())
    .addCommand(serveCommand(opts.startOptions))
    .addCommand(clusterCommand())
    .addCommand(tokenCommand())
    .addCommand(valuesCommand())
    .addCommand(kubeconfigCommand());
}
