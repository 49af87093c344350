/**
 * `tunnel-relay cluster list [--status S] [--group G] [--limit N [--continue TOKEN]]`: one row per cluster with
 * where its agent stands ("no agent yet" apart from "awaiting acceptance"), its display name, and ages ("3m", "2h",
 * "5d") instead of timestamps. Every page of the relay's list is read unless --limit asks for one page
 * (list-pages.ts); --group and the status part of --status are passed to the relay, the agent part is applied
 * here. The filters apply to the text and the JSON output alike.
 */
import { Command, Option } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { ageOf } from '../../shared/kit/cli/age.js';
import { streamPrinter, table } from '../../shared/kit/cli/output.js';
import { oneOf, parseClusterName } from '../../shared/kit/cli/parsers.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import type { Cluster } from './cluster.js';
import { watchClusters } from './cluster-watch.js';
import { nextPageNote, type PageFlags, pageOptions, readPages } from './list-pages.js';
import { pathListCell } from './path-text.js';

/** --status values: the cluster's status, or where its agent stands (Pending covers both of the latter). */
export const STATUS_FILTERS = ['accepted', 'pending', 'denied', 'no-agent', 'awaiting-acceptance'] as const;
type StatusFilter = (typeof STATUS_FILTERS)[number];

type ListFlags = AdminFlags & PageFlags & { status?: StatusFilter; group?: string; watch?: boolean };

/** The relay's largest page of clusters (relay/control/model/paging.ts CLUSTER_PAGE). */
export const CLUSTER_PAGE_MAX = 500;
/**
 * Clusters per page when every page is read: 100 clusters with the most claims (about 22 KB each) fit well within
 * the 4 MiB a response may have (shared/kit/http/client.ts).
 */
export const CLUSTER_FOLLOW_PAGE = 100;

/** The query the relay filters by: the group, and the cluster status --status implies. */
function listPath(flags: Pick<ListFlags, 'status' | 'group'>): string {
  const query = new URLSearchParams();
  if (flags.group !== undefined) query.set('group', flags.group);
  const status =
    flags.status === undefined
      ? undefined
      : flags.status === 'accepted' || flags.status === 'denied'
        ? `${flags.status[0]!.toUpperCase()}${flags.status.slice(1)}`
        : 'Pending';
  if (status !== undefined) query.set('status', status);
  const text = query.toString();
  return text === '' ? '/api/v1/clusters' : `/api/v1/clusters?${text}`;
}

/** Where the cluster's agent stands, from the Joined condition's reason (relay/control/model/conditions.ts). */
export function agentState(c: Cluster): string {
  const joined = c.conditions?.find((x) => x.type === 'Joined');
  switch (joined?.reason) {
    case 'AgentNotRegistered':
      return 'no agent yet';
    case 'AwaitingAcceptance':
      return 'awaiting acceptance';
    case 'HubDenied':
      return 'denied';
    case 'AgentRegistered':
      return 'joined';
    default:
      return joined?.reason ?? 'unknown';
  }
}

function available(c: Cluster): string {
  return c.conditions?.find((x) => x.type === 'Available')?.status ?? 'Unknown';
}

export function clusterRows(items: readonly Cluster[], nowMs: number): string {
  return table(
    [
      'NAME',
      'DISPLAY NAME',
      'GROUP',
      'STATUS',
      'STATE',
      'AGENT',
      'AVAILABLE',
      'PATH',
      'ADDRESS',
      'LEASE RENEWED',
      'AGE',
    ],
    items.map((c) => [
      c.name,
      c.displayName || '-',
      c.group,
      c.status,
      c.state ?? '-',
      agentState(c),
      available(c),
      pathListCell(c),
      c.address ?? '-',
      c.leaseRenewTime ? `${ageOf(c.leaseRenewTime, nowMs)} ago` : '-',
      ageOf(c.createdAt, nowMs),
    ]),
  );
}

function hasStatus(c: Cluster, status: StatusFilter): boolean {
  if (status === 'no-agent') return agentState(c) === 'no agent yet';
  if (status === 'awaiting-acceptance') return agentState(c) === 'awaiting acceptance';
  return c.status.toLowerCase() === status;
}

export function filterClusters(
  items: readonly Cluster[],
  flags: Pick<ListFlags, 'status' | 'group'>,
): Cluster[] {
  return items.filter(
    (c) =>
      (flags.status === undefined || hasStatus(c, flags.status)) &&
      (flags.group === undefined || c.group === flags.group),
  );
}

/** `--status` is matched without regard to case (`Pending` as printed, or `pending`). */
function statusOption(): Option {
  const check = oneOf<StatusFilter>('--status', STATUS_FILTERS);
  return new Option('--status <status>', 'only clusters with this status, or whose agent stands so')
    .choices(STATUS_FILTERS)
    .argParser((v: string) => check(v.toLowerCase()));
}

export function clusterListCommand(): Command {
  const cmd = new Command('list')
    .description('list clusters')
    .addOption(statusOption())
    .option('--group <group>', 'only clusters in this group', (v: string) => parseClusterName(v, '--group'))
    .option('-w, --watch', 'keep watching: update the table as clusters change (docs/CLI.md)');
  for (const option of pageOptions('clusters', CLUSTER_PAGE_MAX)) cmd.addOption(option);
  return withAdminFlags(cmd).action(async (flags: ListFlags) => {
    if (flags.watch && (flags.limit !== undefined || flags.continue !== undefined)) {
      throw new TunnelError('BAD_INPUT', '--watch follows every cluster: leave out --limit and --continue');
    }
    if (flags.watch) return watchClusters(flags, (c) => filterClusters([c], flags).length === 1);
    const res = await withClient(flags, (c) =>
      readPages<Cluster>(c, listPath(flags), flags, CLUSTER_FOLLOW_PAGE),
    );
    const items = filterClusters(res.items, flags);
    const out = streamPrinter();
    if (flags.output === 'json')
      out.json(res.continue === undefined ? { items } : { items, continue: res.continue });
    else out.line(items.length === 0 ? 'no clusters' : clusterRows(items, Date.now()));
    const filters = `${flags.group ? ` --group ${flags.group}` : ''}${flags.status ? ` --status ${flags.status}` : ''}`;
    const next = nextPageNote(`tunnel-relay cluster list${filters}`, res, flags.limit);
    if (next !== null && flags.output !== 'json') out.note(next);
  });
}
