/**
 * `tunnel-relay kubeconfig NAME`: a kubeconfig that reaches the cluster's API through the relay's
 * path proxy. It embeds the relay's CA and the caller's own access key (that is what kubectl sends).
 */
import { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { streamPrinter } from '../../shared/cli/output.js';
import { parseClusterName } from '../../shared/cli/parsers.js';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';

export function kubeconfigCommand(): Command {
  return withAdminFlags(
    new Command('kubeconfig')
      .description("print a kubeconfig that reaches the cluster's API through the relay")
      .argument('<name>', 'cluster name', (v: string) => parseClusterName(v)),
  ).action(async (name: string, flags: AdminFlags) => {
    const text = await withClient(flags, async (c) => {
      try {
        return await c.text('GET', `/api/v1/clusters/${encodeURIComponent(name)}/kubeconfig`, {
          accept: 'text/yaml',
        });
      } catch (err) {
        if (isTunnelError(err, 'NOT_FOUND') && /no route/i.test(err.message)) {
          throw new TunnelError(
            'NOT_FOUND',
            'this relay has no kubeconfig route (GET /api/v1/clusters/:name/kubeconfig); upgrade the relay',
          );
        }
        throw err;
      }
    });
    const out = streamPrinter();
    if (flags.output === 'json') out.json(parseYaml(text));
    else out.line(text.trimEnd());
  });
}
