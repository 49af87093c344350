/** `tunnel-relay cluster create|list|get|accept|deny|delete|rotate-psk|agents`. */

import { Command } from 'commander';
import type { ClusterAgent } from '../../shared/api/cluster.js';
import { TunnelError } from '../../shared/errors.js';
import { streamPrinter } from '../../shared/kit/cli/output.js';
import { parseClusterName, parseHttpUrl } from '../../shared/kit/cli/parsers.js';
import { parseDuration } from '../../shared/kit/duration.js';
import {
  checkAgentReplicas,
  MAX_AGENT_REPLICAS,
  MIN_AGENT_REPLICAS,
} from '../control/store/agent-replicas.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import { clusterAgentsCommand } from './cluster-agents.js';
import { withClusterExistsHint } from './cluster-exists-hint.js';
import { clusterListCommand } from './cluster-list.js';
import { formatRtt, type PathDetail, pathCell, pathLines } from './path-text.js';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Cluster {
  name: string;
  group: string;
  displayName?: string | null;
  status: string;
  conditions?: Condition[];
  state?: string;
  connected?: boolean;
  path?: string;
  pathDetail?: PathDetail | null;
  agentVersion?: string | null;
  agentOutdated?: boolean;
  publicKey?: string | null;
  address?: string | null;
  claims?: Record<string, string>;
  kubernetesVersion?: string | null;
  nodeCount?: number | null;
  leaseRenewTime?: string | null;
  lastHandshake?: string | null;
  rttMs?: number | null;
  createdAt?: string;
  bootstrapPsk?: { state: string; expiresAt: string; usedAt: string | null } | null;
  impersonation?: 'on' | 'off';
  agentReplicas?: number;
  agentsRegistered?: number;
  agentsConnected?: number;
  agents?: ClusterAgent[];
}

/** The agents' lines of `cluster get`: one per agent, the primary first. */
function agentLines(c: Cluster): string[] {
  if (!c.agents || (c.agentReplicas ?? 1) <= 1) return [];
  const head = `agents:       ${c.agentsConnected ?? 0} of ${c.agentsRegistered ?? 0} connected (replicas ${c.agentReplicas})`;
  return [
    head,
    ...c.agents.map(
      (a) =>
        `  ${a.address ?? '-'}  ${a.state}  path ${a.path}  rtt ${a.rttMs == null ? '-' : `${a.rttMs} ms`}  lease ${a.leaseRenewTime ?? '-'}  version ${a.agentVersion ?? '-'}  key ${a.publicKey}`,
    ),
  ];
}

function pskLine(cluster: string, psk: Cluster['bootstrapPsk']): string {
  if (!psk) return '-';
  const renew = `a new join needs \`tunnel-relay cluster rotate-psk ${cluster}\``;
  switch (psk.state) {
    case 'unused':
      return `unused, expires ${psk.expiresAt}`;
    case 'used':
      return `used ${psk.usedAt ?? ''}; ${renew}`;
    case 'expired':
      return `expired ${psk.expiresAt}, unused; ${renew}`;
    default:
      return `${psk.state}; ${renew}`;
  }
}

interface Bootstrap {
  psk: string;
  expiresAt: string;
  joinCommand: string;
  installUrl: string;
  installCommand: string;
}

interface CreateResult {
  cluster: Cluster;
  bootstrap: Bootstrap;
}

const nameArg = (v: string) => parseClusterName(v, 'cluster name');

function agentReplicasArg(v: string): number {
  return checkAgentReplicas(/^\d{1,3}$/.test(v) ? Number(v) : v, '--agent-replicas');
}

function pskTtl(v: string): string {
  parseDuration(v, '--psk-ttl');
  return v;
}

/** One entry per printed line (Printer.lines: a line feed inside a value cannot start a line of its own). */
function impersonationText(v: 'on' | 'off'): string {
  return v === 'on'
    ? 'on (the agent acts as the calling relay user: tunnel-relay:<key id>)'
    : "off (values impersonate: false: every caller acts as the agent's service account)";
}

/** "v1.30.2, 3 nodes" from the claims the agent collects from its API server; "-" while it reported neither. */
function kubernetesLine(c: Cluster): string {
  const nodes = c.nodeCount == null ? null : `${c.nodeCount} node${c.nodeCount === 1 ? '' : 's'}`;
  const parts = [c.kubernetesVersion ?? null, nodes].filter((p) => p !== null);
  return parts.length > 0 ? parts.join(', ') : '-';
}

function clusterDetail(c: Cluster): string[] {
  const lines = [
    `name:          ${c.name}`,
    `group:         ${c.group}`,
    ...(c.displayName ? [`display name:  ${c.displayName}`] : []),
    `status:        ${c.status}`,
    `state:         ${c.state ?? '-'}`,
    `connected:     ${c.connected ? 'yes' : 'no'} (path ${pathCell(c)})`,
    ...pathLines(c, Date.now()),
    `address:       ${c.address ?? '-'}`,
    `public key:    ${c.publicKey ?? '-'}`,
    `agent version: ${c.agentVersion ?? '-'}${c.agentOutdated ? ' (older than the relay: upgrade the agent)' : ''}`,
    `kubernetes:    ${kubernetesLine(c)}`,
    `lease renewed: ${c.leaseRenewTime ?? '-'}`,
    `rtt:           ${c.rttMs == null ? '-' : formatRtt(c.rttMs)}`,
    ...agentLines(c),
    `created:       ${c.createdAt ?? '-'}`,
    `bootstrap PSK: ${pskLine(c.name, c.bootstrapPsk)}`,
    ...(c.impersonation ? [`impersonation: ${impersonationText(c.impersonation)}`] : []),
    'conditions:',
    ...(c.conditions ?? []).map(
      (x) =>
        `  ${x.type}=${x.status}${x.reason ? ` (${x.reason})` : ''}${x.lastTransitionTime ? ` since ${x.lastTransitionTime}` : ''}`,
    ),
  ];
  const claims = Object.entries(c.claims ?? {});
  if (claims.length > 0) lines.push('claims:', ...claims.map(([k, v]) => `  ${k}=${v}`));
  return lines;
}

type BootstrapFlags = AdminFlags & { printInstallCommand?: boolean };

const UPSTREAM_HELP =
  "the agent's default upstream, written into the join command as --upstream (e.g. https://10.0.0.1:6443)";
const upstreamArg = (v: string) => parseHttpUrl(v, '--upstream');

const INSTALL_ONLY_HELP =
  'print only the one-line install command, e.g. for `| sh` where kubectl points at the target cluster';

function printBootstrap(flags: BootstrapFlags, res: CreateResult, verb: string): void {
  const out = streamPrinter();
  if (flags.printInstallCommand) {
    out.line(res.bootstrap.installCommand);
    return;
  }
  if (flags.output === 'json') {
    out.json(res);
    return;
  }
  out.line(
    `cluster ${res.cluster.name} ${verb} in group ${res.cluster.group} (status ${res.cluster.status})`,
  );
  out.line(
    `the PSK is shown only now and expires at ${res.bootstrap.expiresAt}; run this on the agent's host:`,
  );
  out.line('');
  out.line(`  ${res.bootstrap.joinCommand}`);
  out.line('');
  out.line('or, to install the agent on a Kubernetes cluster (the URL works once, until the PSK expires):');
  out.line('');
  out.line(`  ${res.bootstrap.installCommand}`);
}

const enc = encodeURIComponent;

export function clusterCommand(): Command {
  const cluster = new Command('cluster').description('create, inspect and decide on clusters');

  cluster.addCommand(
    withAdminFlags(
      new Command('create')
        .description('create a cluster and print its one-time join command')
        .argument('<name>', 'cluster name (DNS-1123 label)', nameArg)
        .option('--group <group>', 'group the cluster belongs to (default "default")', (v: string) =>
          parseClusterName(v, '--group'),
        )
        .option('--display-name <text>', 'human-readable name', (v: string) => {
          if (v.length > 200)
            throw new TunnelError('BAD_INPUT', `--display-name is ${v.length} characters; at most 200`);
          return v;
        })
        .option(
          '--psk-ttl <duration>',
          'how long the PSK stays valid, e.g. 30m, 24h, 7d (default 24h)',
          pskTtl,
        )
        .option('--upstream <url>', UPSTREAM_HELP, upstreamArg)
        .option(
          '--agent-replicas <n>',
          `agents that may join with the PSK, each its own key (${MIN_AGENT_REPLICAS}..${MAX_AGENT_REPLICAS}, default 1)`,
          agentReplicasArg,
        )
        .option('--print-install-command', INSTALL_ONLY_HELP),
    ).action(
      async (
        name: string,
        flags: BootstrapFlags & {
          group?: string;
          displayName?: string;
          pskTtl?: string;
          upstream?: string;
          agentReplicas?: number;
        },
      ) => {
        const body = {
          name,
          agentReplicas: flags.agentReplicas,
          upstream: flags.upstream,
          group: flags.group,
          displayName: flags.displayName,
          pskTtl: flags.pskTtl,
        };
        const res = await withClient(flags, (c) =>
          c.json<CreateResult>('POST', '/api/v1/clusters', { body }),
        ).catch((err: unknown) => {
          throw withClusterExistsHint(err, name, flags.printInstallCommand === true);
        });
        printBootstrap(flags, res, 'created');
      },
    ),
  );

  cluster.addCommand(clusterListCommand());

  cluster.addCommand(
    withAdminFlags(
      new Command('get').description('show one cluster').argument('<name>', 'cluster name', nameArg),
    ).action(async (name: string, flags: AdminFlags) => {
      const res = await withClient(flags, (c) => c.json<Cluster>('GET', `/api/v1/clusters/${enc(name)}`));
      const out = streamPrinter();
      if (flags.output === 'json') out.json(res);
      else out.lines(clusterDetail(res));
    }),
  );

  for (const [verb, help] of [
    ['accept', 'accept a Pending (or Denied) registration; refused while no agent has registered'],
    ['deny', "deny a registration; the agent's sessions close"],
  ] as const) {
    cluster.addCommand(
      withAdminFlags(new Command(verb).description(help).argument('<name>', 'cluster name', nameArg)).action(
        async (name: string, flags: AdminFlags) => {
          const res = await withClient(flags, (c) =>
            c.json<Cluster>('POST', `/api/v1/clusters/${enc(name)}/${verb}`),
          );
          const out = streamPrinter();
          if (flags.output === 'json') out.json(res);
          else out.line(`cluster ${res.name} is ${res.status}`);
        },
      ),
    );
  }

  cluster.addCommand(
    withAdminFlags(
      new Command('delete')
        .description('delete a cluster and revoke its agent')
        .argument('<name>', 'cluster name', nameArg),
    ).action(async (name: string, flags: AdminFlags) => {
      const res = await withClient(flags, (c) =>
        c.json<{ deleted: string }>('DELETE', `/api/v1/clusters/${enc(name)}`),
      );
      const out = streamPrinter();
      if (flags.output === 'json') out.json(res);
      else out.line(`deleted cluster ${res.deleted}`);
    }),
  );

  cluster.addCommand(
    withAdminFlags(
      new Command('rotate-psk')
        .description('issue a new bootstrap PSK (the old one stops working) and print the join command')
        .argument('<name>', 'cluster name', nameArg)
        .option('--psk-ttl <duration>', 'how long the new PSK stays valid (default 24h)', pskTtl)
        .option('--upstream <url>', UPSTREAM_HELP, upstreamArg)
        .option('--print-install-command', INSTALL_ONLY_HELP),
    ).action(async (name: string, flags: BootstrapFlags & { pskTtl?: string; upstream?: string }) => {
      const body = { pskTtl: flags.pskTtl, upstream: flags.upstream };
      const res = await withClient(flags, (c) =>
        c.json<CreateResult>('POST', `/api/v1/clusters/${enc(name)}/rotate-psk`, { body }),
      );
      printBootstrap(flags, res, 'has a new PSK');
    }),
  );

  cluster.addCommand(clusterAgentsCommand());
  return cluster;
}
