/**
 * `tunnel-relay cluster agents remove NAME KEY`: removes one registered agent of a cluster (an agent set scaled
 * down), through DELETE /api/v1/clusters/NAME/agents/KEY. KEY is the agent's public key as `cluster get` lists it.
 */
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { streamPrinter } from '../../shared/kit/cli/output.js';
import { parseClusterName } from '../../shared/kit/cli/parsers.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';

/** A base64 WireGuard public key (44 characters), or BAD_INPUT naming the value. */
function agentKeyArg(v: string): string {
  if (/^[A-Za-z0-9+/]{43}=$/.test(v)) return v;
  throw new TunnelError(
    'BAD_INPUT',
    `agent key ${JSON.stringify(v.slice(0, 64))} is not a base64 WireGuard public key (44 characters, as cluster get lists it)`,
  );
}

export function clusterAgentsCommand(): Command {
  const agents = new Command('agents').description("manage a cluster's registered agents (agent replicas)");
  agents.addCommand(
    withAdminFlags(
      new Command('remove')
        .description(
          "remove a registered agent (a scaled-down agent set): its credential is revoked, its address freed, its session ended; the cluster's other agents stay",
        )
        .argument('<name>', 'cluster name', (v: string) => parseClusterName(v, 'cluster name'))
        .argument('<key>', "the agent's public key, as cluster get lists it", agentKeyArg),
    ).action(async (name: string, key: string, flags: AdminFlags) => {
      const res = await withClient(flags, (c) =>
        c.json<{ cluster: string; removed: string }>(
          'DELETE',
          `/api/v1/clusters/${encodeURIComponent(name)}/agents/${encodeURIComponent(key)}`,
        ),
      );
      const out = streamPrinter();
      if (flags.output === 'json') out.json(res);
      else out.line(`removed agent ${res.removed} from cluster ${res.cluster}`);
    }),
  );
  return agents;
}
