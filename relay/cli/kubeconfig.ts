/**
 * `tunnel-relay kubeconfig NAME`: a kubeconfig that reaches the cluster's API through the relay's path
 * proxy. The relay mints an access key for it, scoped to that cluster's proxy and expiring after --ttl
 * (default 24h); it shows in `token list` and is revoked with `token revoke`. --merge writes it into a
 * kubeconfig file (kubeconfig-merge.ts) instead of printing it.
 */

import { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { streamPrinter } from '../../shared/kit/cli/output.js';
import { parseClusterName } from '../../shared/kit/cli/parsers.js';
import { shellQuote } from '../../shared/kit/cli/shell-quote.js';
import { parseDuration } from '../../shared/kit/duration.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import { defaultKubeconfigPath, mergeKubeconfigFile } from './kubeconfig-merge.js';

interface Minted {
  keyId: string;
  role: string;
  expiresAt: string;
  context: string;
  kubeconfig: Record<string, unknown>;
}

interface KubeconfigFlags extends AdminFlags {
  ttl: string;
  merge?: boolean;
  kubeconfig?: string;
}

async function mint(name: string, flags: KubeconfigFlags): Promise<Minted> {
  return withClient(flags, async (c) => {
    try {
      return await c.json<Minted>('POST', `/api/v1/clusters/${encodeURIComponent(name)}/kubeconfig`, {
        body: { ttl: flags.ttl },
      });
    } catch (err) {
      if (isTunnelError(err, 'NOT_FOUND') && /no route/i.test(err.message)) {
        throw new TunnelError(
          'NOT_FOUND',
          'this relay has no kubeconfig route (POST /api/v1/clusters/:name/kubeconfig); upgrade the relay',
        );
      }
      throw err;
    }
  });
}

export function kubeconfigCommand(): Command {
  return withAdminFlags(
    new Command('kubeconfig')
      .description("print a kubeconfig that reaches the cluster's API through the relay (with a scoped key)")
      .argument('<name>', 'cluster name', (v: string) => parseClusterName(v))
      .option(
        '--ttl <duration>',
        'lifetime of the minted key, e.g. 8h (at most 30d)',
        (v: string) => {
          parseDuration(v, '--ttl');
          return v;
        },
        '24h',
      )
      .option('--merge', 'write it into a kubeconfig file instead of printing it')
      .option('--kubeconfig <file>', 'the file --merge writes (default: $KUBECONFIG, else ~/.kube/config)'),
  ).action(async (name: string, flags: KubeconfigFlags) => {
    if (flags.kubeconfig !== undefined && !flags.merge) {
      throw new TunnelError('BAD_INPUT', '--kubeconfig names the file --merge writes; add --merge');
    }
    const minted = await mint(name, flags);
    const out = streamPrinter();
    const about = `access key ${minted.keyId} (role ${minted.role}, expires ${minted.expiresAt}; revoke: \`tunnel-relay token revoke ${minted.keyId}\`)`;
    if (!flags.merge) {
      if (flags.output === 'json') out.json(minted.kubeconfig);
      else out.line(toYaml(minted.kubeconfig).trimEnd());
      out.note(about);
      return;
    }
    const file = flags.kubeconfig ?? defaultKubeconfigPath();
    mergeKubeconfigFile(file, minted.kubeconfig);
    if (flags.output === 'json') {
      out.json({
        file,
        context: minted.context,
        keyId: minted.keyId,
        role: minted.role,
        expiresAt: minted.expiresAt,
      });
      return;
    }
    out.line(`wrote context ${minted.context} to ${file}`);
    // `kubectl get --raw PATH` would drop the server URL's path (the relay's /api/v1/clusters/NAME/proxy): version
    // reaches the cluster's /version through it, and every user may read that.
    const where = file === defaultKubeconfigPath() ? '' : ` --kubeconfig ${shellQuote(file)}`;
    out.note(`${about}; use it with: kubectl${where} --context ${minted.context} version`);
  });
}
