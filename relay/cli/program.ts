/** The tunnel-relay command tree. main.ts runs it; wiring code can pass relay start options (plugins). */
import { Command } from 'commander';
import { withCompletion } from '../../shared/kit/cli/completion.js';
import { withVersion } from '../../shared/kit/cli/version-command.js';
import type { StartOptions } from '../start/server.js';
import { adminKeyCommand } from './admin-key.js';
import { auditCommand } from './audit.js';
import { clusterCommand } from './cluster.js';
import { kubeconfigCommand } from './kubeconfig.js';
import { manifestsCommand } from './manifests.js';
import { rateLimitCommand } from './rate-limit.js';
import { serveCommand } from './serve.js';
import { tokenCommand } from './token.js';
import { valuesCommand } from './values.js';

export interface RelayProgramOptions {
  /** The relay's start options (its plugins), loaded when `serve` runs and not before. */
  readonly loadStartOptions?: () => Promise<StartOptions>;
}

export function buildRelayProgram(opts: RelayProgramOptions = {}): Command {
  const program = new Command('tunnel-relay')
    .description('relay for the secure tunnel: control-plane API, packet relay and hub node on one TLS port')
    .addCommand(serveCommand(opts.loadStartOptions))
    .addCommand(clusterCommand())
    .addCommand(tokenCommand())
    .addCommand(valuesCommand())
    .addCommand(kubeconfigCommand())
    .addCommand(auditCommand())
    .addCommand(rateLimitCommand())
    .addCommand(adminKeyCommand())
    .addCommand(manifestsCommand())
    .addHelpText(
      'after',
      `
Examples:
  tunnel-relay serve --data-dir ./relay-data            # prints the CA pin and, once, the admin key
  export TUNNEL_RELAY_URL=https://127.0.0.1:8443 TUNNEL_ACCESS_KEY=trk_... TUNNEL_RELAY_CA_PIN=sha256:...
  tunnel-relay cluster create edge-1                    # prints the agent's join command
  tunnel-relay cluster list
  tunnel-relay token create --role bootstrap            # an org-wide join token (joins stay Pending)
  tunnel-relay cluster accept edge-2`,
    );
  return withCompletion(withVersion(program));
}
